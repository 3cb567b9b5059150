"""The ledger's measurement windows: written at each flush, listed by `wattlog windows RUN`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict

from sqlalchemy import insert, select
from sqlmodel import col

from wattlog.accounting.ledger.models import WindowRecord
from wattlog.accounting.ledger.store import Ledger
from wattlog.errors import ConfigError
from wattlog.records import WindowEnergy


def record_windows(ledger: Ledger, run: int | str, windows: Sequence[WindowEnergy]) -> int:
    """Store window rows of `run` in one transaction; the number written.

    Raises:
        ConfigError: A row ends before it starts or has a non-finite energy.
        LedgerError: The run does not exist or the database fails (nothing written).
    """
    for w in windows:
        if not w.end_s >= w.start_s or not all(math.isfinite(x) for x in (w.energy_j, w.low_j, w.high_j)):
            raise ConfigError(f"window {w.name!r} of {w.device}: end before start or a non-finite energy")
    if not windows:
        return 0
    with ledger.transaction(f"record {len(windows)} window rows") as session:
        run_id = ledger.run_id(session, run)
        session.execute(
            insert(WindowRecord),
            [{"run_id": run_id, **asdict(w), "kind": str(w.kind), "source": str(w.source)} for w in windows],
        )
    return len(windows)


def windows(ledger: Ledger, run: int | str) -> list[WindowRecord]:
    """A run's window rows in start order (one per window and device)."""
    with ledger.transaction("read windows") as session:
        run_id = ledger.run_id(session, run)
        query = select(WindowRecord).where(col(WindowRecord.run_id) == run_id)
        return list(
            session.execute(query.order_by(col(WindowRecord.start_s), col(WindowRecord.id))).scalars()
        )
