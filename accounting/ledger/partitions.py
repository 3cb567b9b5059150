"""PostgreSQL's energy table by day: writers add the day's partition, compaction replaces a raw day whole.

Since revision 0014 the energy table on PostgreSQL is partitioned by RANGE of ``hour``, one
partition per UTC day (``energy_record_d<day>``, hours ``24 * day`` to ``24 * day + 24``) and a
DEFAULT partition. A writer creates its rows' day when missing (:func:`ensure_days`) rather than
letting them land in DEFAULT: a day left in DEFAULT could never get its own partition later
without moving its rows (PostgreSQL refuses a partition whose range DEFAULT already holds), so it
would be compacted by the slow DELETE path forever. DEFAULT only catches what the creation could
not place (a race lost to such rows); compaction folds it by DELETE like SQLite.

Compacting a day (:func:`replace_day`, called by
:func:`wattlog.accounting.ledger.compaction.fold_in_batches`) reads its rows, folds the raw ones,
drops the partition and creates it again holding the hourly rows: no DELETE of millions of rows,
no VACUUM, and the raw day's disk space is returned at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from wattlog.accounting.ledger.models import Resolution
from wattlog.accounting.ledger.reader import ENERGY

DAY_HOURS = 24
_PREFIX = f"{ENERGY.name}_d"
_KNOWN = "known_energy_days"
"""Key in a DBAPI connection's info dict: days this connection saw exist (skips the catalog read)."""
_LOCK_KEY = 0x776C_6461  # advisory lock serialising partition creation between agents ("wlda")


def partition_name(day: int) -> str:
    """The partition table of one UTC day (days since the epoch)."""
    return f"{_PREFIX}{day}"


def is_partitioned(connection: Connection) -> bool:
    """Whether the energy table is a partitioned PostgreSQL table (revision 0014 onwards)."""
    if connection.dialect.name != "postgresql":
        return False
    found = connection.execute(
        text(
            "SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid"
            " WHERE c.relname = :name AND pg_table_is_visible(c.oid)"
        ),
        {"name": ENERGY.name},
    )
    return found.first() is not None


def day_partitions(connection: Connection) -> list[int]:
    """The days that have their own partition, ascending."""
    rows = connection.execute(
        text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = :name"
        ),
        {"name": ENERGY.name},
    )
    days = (str(r[0]).removeprefix(_PREFIX) for r in rows)
    return sorted(int(d) for d in days if d.isdigit())  # not DEFAULT (energy_record_default)


def ensure_days(session: Session, hours: Iterable[int]) -> None:
    """Create the partitions of these hours' days that are missing (PostgreSQL, partitioned only).

    Race-safe between agents: creation is serialised by an advisory lock held to the end of this
    transaction, which must be its own, before the flush's (`Ledger.record_intervals`): a flush that
    had already read the table would hold a lock the creation waits for (deadlock). It runs in a
    savepoint, so a creation PostgreSQL refuses (DEFAULT
    already holds rows of that day) leaves the flush's rows to DEFAULT instead of failing it.
    """
    connection = session.connection()
    if connection.dialect.name != "postgresql":
        return
    known: set[int] = connection.connection.info.setdefault(_KNOWN, set())
    days = {h // DAY_HOURS for h in hours} - known
    if not days or not is_partitioned(connection):
        return
    existing = set(day_partitions(connection))
    missing = days - existing
    if missing:
        connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        for day in sorted(missing):
            _create_day(session, day)
    known.update(days)


def _create_day(session: Session, day: int) -> None:
    try:
        with session.begin_nested():
            session.execute(text(_create_sql(day, if_not_exists=True)))
    except DBAPIError:  # DEFAULT holds rows of this day: they stay there, compaction folds them
        pass


def _create_sql(day: int, *, if_not_exists: bool = False) -> str:
    guard = "IF NOT EXISTS " if if_not_exists else ""
    return (
        f"CREATE TABLE {guard}{partition_name(day)} PARTITION OF {ENERGY.name}"
        f" FOR VALUES FROM ({day * DAY_HOURS}) TO ({(day + 1) * DAY_HOURS})"
    )


def whole_days(session: Session, before_hour: int) -> list[int]:
    """Days with their own partition whose hours all precede `before_hour` ([] unless partitioned)."""
    connection = session.connection()
    if not is_partitioned(connection):
        return []
    return [d for d in day_partitions(connection) if (d + 1) * DAY_HOURS <= before_hour]


def replace_day(
    session: Session, day: int, fold: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> tuple[int, int]:
    """Replace one day's partition by one holding its hourly rows and `fold` of its raw ones.

    The partition is locked first (that day's writers wait, others only during the swap), so
    every raw row read is folded and none is added meanwhile. Returns (raw rows, rows folded).
    """
    name = partition_name(day)
    session.execute(text(f"LOCK TABLE {name} IN ACCESS EXCLUSIVE MODE"))
    raw_sql = text(f"SELECT * FROM {name} WHERE resolution = :raw")  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
    raw = [dict(r._mapping) for r in session.execute(raw_sql, {"raw": Resolution.RAW.value})]
    if not raw:
        return 0, 0
    kept_sql = text(f"SELECT * FROM {name} WHERE resolution <> :raw")  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
    kept = [dict(r._mapping) for r in session.execute(kept_sql, {"raw": Resolution.RAW.value})]
    folded = fold(raw)
    session.execute(text(f"DROP TABLE {name}"))
    session.execute(text(_create_sql(day)))
    for rows in (kept, folded):
        if rows:
            session.execute(insert(ENERGY), rows)
    return len(raw), len(folded)
