"""The ledger's measurement windows: written at each flush, listed by `wattlog windows RUN`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import insert, select
from sqlmodel import col

from wattlog.accounting.ledger.models import WindowRecord
from wattlog.accounting.ledger.revisions import window_shares
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import member_or_text
from wattlog.errors import ConfigError
from wattlog.records import (
    EnergyFigure,
    EnergyInterval,
    Kind,
    Source,
    Terms,
    physical_band,
    revised_terms,
    summed_band,
)


def record_windows(ledger: Ledger, run: int | str, windows: Sequence[EnergyInterval]) -> int:
    """Store window rows of `run` in one transaction; the number written.

    Raises:
        ConfigError: A row ends before it starts or has a non-finite energy.
        RunNotFound: No such run (nothing written).
        LedgerError: The database fails (nothing written).
    """
    for w in windows:
        if not w.end_s >= w.start_s or not all(math.isfinite(x) for x in (w.energy_j, w.low_j, w.high_j)):
            raise ConfigError(f"window {w.window!r} of {w.device}: end before start or a non-finite energy")
    if not windows:
        return 0
    with ledger.transaction(f"record {len(windows)} window rows") as session:
        run_id = ledger.run_id(session, run)
        session.execute(
            insert(WindowRecord),
            [_row(run_id, w) for w in windows],
        )
    return len(windows)


def windows(ledger: Ledger, run: int | str) -> list[EnergyInterval]:
    """A run's window rows in start order (one per window and device), as frozen read models.

    A window closed before the agent revised its span's band has its share of the revision
    (ledger.revisions.window_shares), as the run's totals and hours have theirs.

    Raises:
        RunNotFound: No such run.
    """
    with ledger.transaction("read windows") as session:
        run_id = ledger.run_id(session, run)
        query = select(WindowRecord).where(col(WindowRecord.run_id) == run_id)
        rows = session.execute(query.order_by(col(WindowRecord.start_s), col(WindowRecord.id))).scalars()
        read = [_read(row) for row in rows]
        return [
            _revised(w, shares) for w, shares in zip(read, window_shares(session, run_id, read), strict=True)
        ]


def _revised(window: EnergyInterval, shares: Sequence[Terms]) -> EnergyInterval:
    """`window` with its shares of band revisions added (stored: low and high, no sampling part apart)."""
    if not shares:
        return window
    low_j, high_j = summed_band(*revised_terms((window.low_j, window.high_j, 0.0, 0.0, 0.0, 0.0), shares))
    low_j, high_j = physical_band(window.energy_j, low_j, high_j)
    return replace(window, figure=replace(window.figure, low_j=low_j, high_j=high_j))


def _read(row: WindowRecord) -> EnergyInterval:
    kind, source = member_or_text(Kind, row.kind), member_or_text(Source, row.source)
    low_j, high_j = physical_band(row.energy_j, row.low_j, row.high_j)
    figure = EnergyFigure(kind, source, row.energy_j, low_j, high_j)  # type: ignore[arg-type]
    return EnergyInterval(row.host, row.device, row.start_s, row.end_s, figure, row.name, row.parent)


def _row(run_id: int, w: EnergyInterval) -> dict[str, object]:
    """The table row of one window (its band without random parts: a window is never summed over time)."""
    return {
        "run_id": run_id, "name": w.window, "parent": w.parent, "host": w.host, "device": w.device,
        "kind": str(w.kind), "source": str(w.source), "start_s": w.start_s, "end_s": w.end_s,
        "energy_j": w.energy_j, "low_j": w.low_j, "high_j": w.high_j,
    }  # fmt: skip
