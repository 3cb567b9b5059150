"""A run's stored site figures: written at its start (RunSpec.site_figures), changed only on purpose.

The figures themselves (what a site's PUE, WUE and intensity were, with sources) are accounting's
(accounting.carbon.run_sites); the ledger keeps them as JSON on the run and records each deliberate
change as a ``resite`` event holding what was there before, so no change is silent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from wattlog.accounting.ledger.models import Event, Run
from wattlog.accounting.ledger.reader import find_run
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import RunInfo
from wattlog.events import EventKind


def resite_run(ledger: Ledger, run: int | str, site: str, figures: Mapping[str, Any], reason: str) -> RunInfo:
    """Give `run` the site `site` with `figures`, and record the change (before and after) as an event.

    Raises:
        RunNotFound: No such run.
        LedgerError: The database fails (nothing changed).
    """
    with ledger.transaction(f"resite run {run!r}") as session:
        row: Run = find_run(session, run)
        before = {"site": row.site, "figures": row.site_figures}
        row.site, row.site_figures = site, dict(figures)
        session.add(row)
        session.add(
            Event(
                run_id=cast(int, row.id),
                kind=EventKind.RESITE,
                time_s=ledger.clock.wall(),
                payload={
                    "before": before,
                    "after": {"site": site, "figures": dict(figures)},
                    "reason": reason,
                },
            )
        )
        session.flush()
        return RunInfo.of(row)
