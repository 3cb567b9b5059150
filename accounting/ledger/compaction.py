"""Hourly compaction: old raw rows folded into one row per (run, host, device, kind, source, hour) stretch.

A folded row's joules and band terms are the exact sums of the rows it
replaces, so totals and hour-by-hour emissions are the same before and after.

What was folded stays known: a folded row covers exactly the contiguous
stretch of rows it replaced (a hole between rows starts another folded row),
so a spool replayed after compaction finds its rows covered and never counts
them twice (:func:`wattlog.accounting.ledger.writes.new_intervals`). Only the
rows the compaction itself deleted are folded: each hour's raw rows are
deleted with RETURNING and folded from what came back, so a row another
transaction commits meanwhile (PostgreSQL, READ COMMITTED) is either folded
or left raw, never deleted unfolded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from wattlog.accounting.ledger.models import Resolution
from wattlog.accounting.ledger.reader import ENERGY
from wattlog.records import BAND_TERMS

CONTIGUOUS_S = 1e-6
"""Rows closer than this (seconds) are one stretch: an agent's next row starts where its last ended."""
_KEYS = ("run_id", "host", "device", "kind", "source", "hour")
_SUMMED = ("energy_j", *BAND_TERMS)


@dataclass(frozen=True, slots=True)
class Compaction:
    """What :meth:`Ledger.compact_hourly` did."""

    raw_rows: int
    hourly_rows: int
    before_hour: int


def fold_hours(session: Session, before_hour: int) -> Compaction:
    """Fold the raw rows of hours before `before_hour` into hourly rows, inside an open transaction."""
    e = ENERGY.c
    old = (e.resolution == Resolution.RAW.value) & (e.hour < before_hour)
    hours = sorted(session.execute(select(e.hour).where(old).distinct()).scalars())
    raw_rows = hourly_rows = 0
    for hour in hours:
        taken = delete(ENERGY).where((e.resolution == Resolution.RAW.value) & (e.hour == hour))
        columns = (*_KEYS, "start_s", "end_s", *_SUMMED)
        rows = [dict(row._mapping) for row in session.execute(taken.returning(*(e[c] for c in columns)))]
        folded = fold_rows(rows)
        if folded:
            session.execute(insert(ENERGY), folded)
        raw_rows += len(rows)
        hourly_rows += len(folded)
    return Compaction(raw_rows=raw_rows, hourly_rows=hourly_rows, before_hour=before_hour)


def fold_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One hourly row per key and contiguous stretch of `rows` (their sums, min start, max end)."""
    folded: list[dict[str, Any]] = []
    last: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: (*(str(r[k]) for k in _KEYS), r["start_s"])):
        key = tuple(row[k] for k in _KEYS)
        acc = last.get(key)
        if acc is None or row["start_s"] > acc["end_s"] + CONTIGUOUS_S:
            acc = {**row, "resolution": Resolution.HOURLY.value}
            last[key] = acc
            folded.append(acc)
            continue
        acc["end_s"] = max(acc["end_s"], row["end_s"])
        for name in _SUMMED:
            acc[name] += row[name]
    return folded
