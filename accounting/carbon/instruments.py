"""Contractual instruments used by runs, kept in the ledger so their MWh are used once across calls.

`wattlog scope2` reads every recorded use of a site's instruments (:func:`load_uses`), matches
each run against what the other runs left, and records the run's own uses in place of any it
had (:func:`replace_uses`): accounting a run again gives it the same MWh, never a second share.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from sqlalchemy import delete, select
from sqlmodel import col

from wattlog.accounting.carbon.scope2 import Use
from wattlog.accounting.ledger.models import InstrumentUse, Run
from wattlog.accounting.ledger.store import Ledger


def load_uses(ledger: Ledger, site: str, method: str) -> list[Use]:
    """Every recorded use of `site`'s instruments under `method` ("annual" or "hourly")."""
    query = (
        select(InstrumentUse, col(Run.name))
        .join(Run, col(Run.id) == col(InstrumentUse.run_id))
        .where(col(InstrumentUse.site) == site, col(InstrumentUse.method) == method)
    )
    with ledger.transaction(f"read instrument uses of site {site!r}") as session:
        rows = session.execute(query).all()
    return [Use(u.instrument, u.period, name, u.mwh) for u, name in rows]


def replace_uses(
    ledger: Ledger, site: str, method: str, run: str | int, uses: Mapping[tuple[str, int], float]
) -> int:
    """Record the uses of `run` (instrument id, period -> MWh) in place of those it had; returns rows.

    Raises:
        LedgerError: No such run, or the ledger refused the write (nothing is written then).
    """
    run_id = ledger.get_run(run).id
    now = time.time()
    with ledger.transaction(f"record instrument uses of run {run}") as session:
        session.execute(
            delete(InstrumentUse).where(
                col(InstrumentUse.site) == site,
                col(InstrumentUse.method) == method,
                col(InstrumentUse.run_id) == run_id,
            )
        )
        session.add_all(
            InstrumentUse(
                site=site, instrument=i, method=method, period=p, run_id=run_id, mwh=m, recorded_s=now
            )
            for (i, p), m in sorted(uses.items())
            if m > 0
        )
    return sum(1 for m in uses.values() if m > 0)
