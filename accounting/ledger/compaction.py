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

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from wattlog.accounting.ledger.models import Resolution
from wattlog.accounting.ledger.partitions import DAY_HOURS, whole_days
from wattlog.accounting.ledger.reader import ENERGY
from wattlog.accounting.ledger.server_fold import fold_day, hour_batches
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


BATCH_ROWS = 200_000
"""Raw rows folded per transaction (whole hours: an hour larger than this is one transaction of its own).
One transaction for 11 M rows held SQLite's write lock for 84 s and every agent's flush with it."""


def fold_in_batches(
    transaction: Callable[[str], AbstractContextManager[Session]],
    before_hour: int,
    batch_rows: int = BATCH_ROWS,
) -> Compaction:
    """Fold the raw rows of hours before `before_hour`, about `batch_rows` rows per transaction.

    Each hour is folded whole in one transaction (its buckets need all its rows), so a
    failure leaves every hour either folded or raw, totals exact either way. On a partitioned
    PostgreSQL ledger each whole past day is folded by the server (ledger.server_fold: hours in
    batches into a staging table, then a short swap; no DELETE, no VACUUM, no row in the client);
    the hours left (DEFAULT's, SQLite's) are deleted in batches.

    Args:
        transaction: Opens one committed transaction (`Ledger.transaction`).
        before_hour: First hour (hour_of) left raw.
        batch_rows: Raw rows per transaction, at least.
    """
    e = ENERGY.c
    old = (e.resolution == Resolution.RAW.value) & (e.hour < before_hour)
    with transaction("list the hours to compact") as session:
        days = whole_days(session, before_hour)  # PostgreSQL: whole past days, folded by partition
        counts = list(
            session.execute(select(e.hour, func.count()).where(old).group_by(e.hour).order_by(e.hour))
        )
    raw_rows = hourly_rows = 0
    for day in days:
        hours_of_day = [(int(h), int(n)) for h, n in counts if int(h) // DAY_HOURS == day]
        if not hours_of_day:  # compacted already
            continue
        raw, hourly = fold_day(transaction, day, hours_of_day, batch_rows, CONTIGUOUS_S)
        raw_rows += raw
        hourly_rows += hourly
    # the hours left: SQLite's, DEFAULT's, and those of a day not yet whole
    left = [(int(h), int(n)) for h, n in counts if int(h) // DAY_HOURS not in days]
    for hours in hour_batches(left, batch_rows):
        with transaction(f"compact {len(hours)} hours of raw rows") as session:
            for hour in hours:
                raw, hourly = fold_hour(session, hour)
                raw_rows += raw
                hourly_rows += hourly
    return Compaction(raw_rows=raw_rows, hourly_rows=hourly_rows, before_hour=before_hour)


def fold_hour(session: Session, hour: int) -> tuple[int, int]:
    """Fold one hour's raw rows (those this transaction deletes); returns (raw rows, hourly rows)."""
    e = ENERGY.c
    taken = delete(ENERGY).where((e.resolution == Resolution.RAW.value) & (e.hour == hour))
    columns = (*_KEYS, "start_s", "end_s", *_SUMMED)
    rows = [dict(row._mapping) for row in session.execute(taken.returning(*(e[c] for c in columns)))]
    folded = fold_rows(rows)
    if folded:
        session.execute(insert(ENERGY), folded)
    return len(rows), len(folded)


def return_space(engine: Engine) -> None:
    """Give the deleted rows' space back: SQLite's file shrinks (VACUUM); PostgreSQL's table reuses it.

    SQLite keeps freed pages in the file until VACUUM rewrites it (a compacted day's 2.0 GB
    stayed 2.0 GB); it needs no open transaction and briefly as much free disk as the file.
    PostgreSQL's plain VACUUM marks the space reusable by later rows (not returned to the OS:
    that takes VACUUM FULL, which locks the table).
    """
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        if connection.dialect.name == "sqlite":
            connection.exec_driver_sql("VACUUM")
            # in WAL mode VACUUM's new pages sit in the -wal file: copy them back and truncate it
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        elif connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"VACUUM ANALYZE {ENERGY.name}")


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
