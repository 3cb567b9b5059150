"""Hourly compaction: old raw rows folded into one row per (run, host, device, kind, source, hour).

A folded row's joules and band terms are the exact sums of the rows it
replaces, so totals and hour-by-hour emissions are the same before and after.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from wattlog.accounting.ledger.models import Resolution
from wattlog.accounting.ledger.reader import ENERGY
from wattlog.records import BAND_TERMS


@dataclass(frozen=True, slots=True)
class Compaction:
    """What :meth:`Ledger.compact_hourly` did."""

    raw_rows: int
    hourly_rows: int
    before_hour: int


def fold_hours(session: Session, before_hour: int) -> Compaction:
    """Fold the raw rows of hours before `before_hour` into hourly rows, inside an open transaction."""
    e = ENERGY.c
    keys = (e.run_id, e.host, e.device, e.kind, e.source, e.hour)
    old = (e.resolution == Resolution.RAW.value) & (e.hour < before_hour)
    folded = (
        select(
            *keys,
            func.min(e.start_s),
            func.max(e.end_s),
            func.sum(e.energy_j),
            *(func.sum(e[k]) for k in BAND_TERMS),
        )
        .where(old)
        .group_by(*keys)
    )
    raw_rows = session.execute(select(func.count()).where(old)).scalar_one()
    columns = (
        "run_id",
        "host",
        "device",
        "kind",
        "source",
        "hour",
        "start_s",
        "end_s",
        "energy_j",
        *BAND_TERMS,
    )
    rows = [
        {**dict(zip(columns, row, strict=True)), "resolution": Resolution.HOURLY.value}
        for row in session.execute(folded)
    ]
    if rows:
        session.execute(insert(ENERGY), rows)
    session.execute(delete(ENERGY).where(old))
    return Compaction(raw_rows=raw_rows, hourly_rows=len(rows), before_hour=before_hour)
