"""A run whose ledger was unreachable at start: measured into the spool under its name, stored later.

The training must not wait for the ledger (a database down, its connections
used up): the run session starts its agent anyway, spools a ``start`` line
(the run's registration, with its true start time), its energy rows, its
``stopped`` event and its end, and replays them when the ledger is back: at
the end of the run, or by `wattlog replay`. Replay creates the run first, so
every row lands in it once. What is still spooled at the end is said, and the
command exits non-zero (:data:`wattlog.telemetry.sinks.INCOMPLETE_EXIT`).
"""

from __future__ import annotations

import logging
from typing import Any

from wattlog.accounting.ledger import Ledger, Status
from wattlog.accounting.ledger.spool import Spool
from wattlog.causes import LEDGER_OUTAGE
from wattlog.errors import LedgerError
from wattlog.trainer.session_config import SessionConfig

log = logging.getLogger(__name__)


def offline_start(config: SessionConfig, site: str, host: str, start_s: float) -> dict[str, Any]:
    """The spooled registration of the run (Ledger.start_run's keywords, with its start)."""
    return {
        "project": config.project,
        "role": str(config.role),
        "model": config.model,
        "site": site,
        "host": host,
        "config": dict(config.config),
        "start_s": start_s,
        **config.labels,
    }


def close_offline(spool: Spool, ledger: Ledger, run: str, status: Status) -> bool:
    """Spool the run's end, then try to store the whole spool once more (its `stopped` event is in it).

    Returns:
        Whether everything is in the ledger now (False: it stays in the spool for `wattlog replay`).
    """
    spool.append_end(run, status.value, ledger.wall_s())
    try:
        spool.replay(ledger)
    except LedgerError as error:
        log.error(
            "run %s is not in the ledger (%s): it stays in %s; run `wattlog replay` when the ledger is back",
            run,
            error,
            spool.path,
            extra=LEDGER_OUTAGE,
        )
        return False
    finally:
        spool.close()
    return True
