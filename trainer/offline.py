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
from wattlog.errors import LedgerError
from wattlog.events import EventKind
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


def close_offline(
    spool: Spool, ledger: Ledger, run: str, status: Status, stopped: dict[str, Any] | None
) -> bool:
    """Spool the run's `stopped` event and end, then try to store the whole spool once more.

    Returns:
        Whether everything is in the ledger now (False: it stays in the spool for `wattlog replay`).
    """
    now_s = ledger.wall_s()
    if stopped is not None:
        spool.append_event(run, {"kind": str(EventKind.STOPPED), "time_s": now_s, "payload": stopped})
    spool.append_end(run, status.value, now_s)
    try:
        spool.replay(ledger)
    except LedgerError as error:
        log.error(
            "run %s is not in the ledger (%s): it stays in %s; run `wattlog replay` when the ledger is back",
            run,
            error,
            spool.path,
        )
        return False
    finally:
        spool.close()
    return True
