"""Compaction of a PostgreSQL day partition by the server: SQL folds the rows, the client holds none.

Folding a day in Python (revision 0014's way) read the whole raw day into the client in one
transaction: 1.05 GiB of client memory for 460,800 rows, 3.97 GiB for 1.84 M (issue 41). Here the
hourly rows are built by ``INSERT ... SELECT ... GROUP BY`` into a staging table, a batch of
hours per transaction (writers of the day go on meanwhile), then one short transaction swaps them
in: the day's partition is locked, any hour that gained rows since its batch is folded again, the
day's existing hourly rows are copied over, the partition is emptied with TRUNCATE (its raw day's
space goes back to the system at once, as a DROP would) and refilled with the staged rows.

TRUNCATE rather than DETACH and DROP: DETACH takes an ACCESS EXCLUSIVE lock on the whole energy
table, so every agent's flush would queue behind the swap (and behind any long reader the swap
waits for); the TRUNCATE locks only the past day being compacted. (DETACH ... CONCURRENTLY is
refused while a DEFAULT partition exists.)

A stretch is what :func:`wattlog.accounting.ledger.compaction.fold_rows` makes: the rows of one key
ordered by start, a new stretch wherever a row starts more than CONTIGUOUS_S after every earlier
row of the key has ended (a window over the earlier rows' latest end).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager

from sqlalchemy import text
from sqlalchemy.orm import Session

from wattlog.accounting.ledger.models import Resolution
from wattlog.accounting.ledger.partitions import partition_name
from wattlog.records import BAND_TERMS

Transaction = Callable[[str], AbstractContextManager[Session]]

_KEY = "run_id, host, device, kind, source"
_SUMMED = ("energy_j", *BAND_TERMS)
_COLUMNS = ("run_id", "host", "device", "kind", "source", "resolution", "hour", "start_s", "end_s", *_SUMMED)


def staging_name(day: int) -> str:
    """The table one day's hourly rows are built in before they replace the day's rows."""
    return f"energy_record_fold_d{day}"


def hour_batches(counts: Sequence[tuple[int, int]], batch_rows: int) -> Iterator[list[int]]:
    """Consecutive hours grouped until a group holds `batch_rows` rows."""
    hours: list[int] = []
    rows = 0
    for hour, count in counts:
        hours.append(hour)
        rows += count
        if rows >= batch_rows:
            yield hours
            hours, rows = [], 0
    if hours:
        yield hours


def fold_sql(source: str, target: str, contiguous_s: float) -> str:
    """INSERT into `target` the hourly rows of `source`'s raw rows of the hours ``:hours``."""
    sums = ", ".join(f"sum({c})" for c in _SUMMED)
    return (
        f"INSERT INTO {target} ({', '.join(_COLUMNS)})"  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
        f" SELECT {_KEY}, '{Resolution.HOURLY.value}', hour, min(start_s), max(end_s), {sums}"
        " FROM (SELECT *, sum(CASE WHEN prev_end IS NULL OR start_s > prev_end + :gap THEN 1 ELSE 0 END)"
        f" OVER (PARTITION BY {_KEY}, hour ORDER BY start_s, id ROWS UNBOUNDED PRECEDING) AS stretch"
        f" FROM (SELECT *, max(end_s) OVER (PARTITION BY {_KEY}, hour ORDER BY start_s, id"
        " ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end"
        f" FROM {source} WHERE resolution = '{Resolution.RAW.value}' AND hour = ANY(:hours)) ordered"
        f") numbered GROUP BY {_KEY}, hour, stretch"
    ).replace(":gap", repr(contiguous_s))


def fold_day(
    transaction: Transaction,
    day: int,
    counts: Sequence[tuple[int, int]],
    batch_rows: int,
    contiguous_s: float,
) -> tuple[int, int]:
    """Compact one day's partition in the server (see the module's note); returns (raw rows, hourly rows).

    Args:
        transaction: Opens one committed transaction (`Ledger.transaction`).
        day: The day (days since the epoch); its partition must exist.
        counts: (hour, raw rows) of the day's hours, ascending, as listed before.
        batch_rows: Raw rows folded per staging transaction, at least (whole hours).
        contiguous_s: Rows closer than this are one stretch.
    """
    part, stage = partition_name(day), staging_name(day)
    fold = text(fold_sql(part, stage, contiguous_s))
    with transaction(f"stage day {day}'s compaction") as session:
        session.execute(text(f"DROP TABLE IF EXISTS {stage}"))  # left by a compaction that died
        session.execute(text(f"CREATE TABLE {stage} (LIKE {part} INCLUDING DEFAULTS)"))
    for hours in hour_batches(counts, batch_rows):
        with transaction(f"fold {len(hours)} hours of day {day} in the server") as session:
            session.execute(fold, {"hours": hours})
    with transaction(f"swap day {day}'s hourly rows in") as session:
        session.execute(text(f"LOCK TABLE {part} IN ACCESS EXCLUSIVE MODE"))
        now = _raw_counts(session, part)
        changed = [h for h, n in now.items() if n != dict(counts).get(h)]
        if changed:  # a replay added rows since their batch: fold those hours again, under the lock
            session.execute(text(f"DELETE FROM {stage} WHERE hour = ANY(:hours)"), {"hours": changed})  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
            session.execute(fold, {"hours": changed})
        columns = ", ".join(("id", *_COLUMNS))
        kept = f"SELECT {columns} FROM {part} WHERE resolution <> '{Resolution.RAW.value}'"  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
        kept_rows = _written(session, f"INSERT INTO {stage} ({columns}) {kept}")
        session.execute(text(f"TRUNCATE {part}"))
        rows = _written(session, f"INSERT INTO {part} ({columns}) SELECT {columns} FROM {stage}")  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
        session.execute(text(f"DROP TABLE {stage}"))
    return sum(now.values()), rows - kept_rows


def _written(session: Session, insert_sql: str) -> int:
    """Rows an INSERT wrote."""
    return int(session.execute(text(insert_sql)).rowcount)  # type: ignore[attr-defined]  # a CursorResult


def _raw_counts(session: Session, part: str) -> dict[int, int]:
    rows = session.execute(
        text(f"SELECT hour, count(*) FROM {part} WHERE resolution = '{Resolution.RAW.value}' GROUP BY hour")  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
    )
    return {int(h): int(n) for h, n in rows}
