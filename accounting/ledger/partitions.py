"""PostgreSQL's energy table by day: each day's partition made ahead of its rows, DEFAULT kept empty.

Since revision 0014 the energy table on PostgreSQL is partitioned by RANGE of ``hour``, one
partition per UTC day (``energy_record_d<day>``, hours ``24 * day`` to ``24 * day + 24``) and a
DEFAULT partition. Days are created ahead of their rows (:class:`wattlog.accounting.ledger.day_plan.DayPlan`:
when a run starts, and by the last hour of each day, by whichever connection may), because a day
whose rows land in DEFAULT can get its own partition only once they are moved out
(:func:`move_default_day`; PostgreSQL refuses a partition whose range DEFAULT holds rows of).

Creating a day costs a flush nothing when it cannot be done: the role's right to create
(:func:`can_create`) and DEFAULT's rows of the day (:func:`default_days`) are read first, without
the lock, so an agent whose role lacks CREATE, or a day a bulk import put in DEFAULT, neither waits
on the advisory lock nor makes the server fail a statement (issue 41: 997 server errors for 996
flushes, 5 flushes a second). Such rows are a `wattlog check` finding (:func:`default_rows`).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from wattlog.accounting.ledger.reader import ENERGY

DAY_HOURS = 24
_PREFIX = f"{ENERGY.name}_d"
DEFAULT_PARTITION = f"{ENERGY.name}_default"
_LOCK_KEY = 0x776C_6461  # advisory lock serialising partition creation between agents ("wlda")
# both resolutions named, so the (resolution, hour) index answers "rows of these hours" by two seeks
_BOTH = "resolution IN ('raw', 'hourly')"


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


def can_create(connection: Connection) -> bool:
    """Whether this connection's role may add a partition: it must own the energy table (or be a
    member of its owner) and may create in its schema (PostgreSQL's rule for PARTITION OF)."""
    return bool(
        connection.execute(
            text(
                "SELECT pg_has_role(current_user, c.relowner, 'USAGE')"
                " AND has_schema_privilege(c.relnamespace, 'CREATE')"
                " FROM pg_class c WHERE c.oid = CAST(:name AS regclass)"
            ),
            {"name": ENERGY.name},
        ).scalar()
    )


def default_days(connection: Connection, days: Iterable[int]) -> set[int]:
    """Those of `days` whose rows DEFAULT holds (one index probe each): such a day cannot be created."""
    held = set()
    for day in sorted(set(days)):
        probe = text(
            f"SELECT 1 FROM {DEFAULT_PARTITION} WHERE {_BOTH} AND hour >= :lo AND hour < :hi LIMIT 1"  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
        )
        if connection.execute(probe, {"lo": day * DAY_HOURS, "hi": (day + 1) * DAY_HOURS}).first():
            held.add(day)
    return held


def default_rows(connection: Connection) -> dict[int, int]:
    """Day -> rows the DEFAULT partition holds of it (empty when none, or not partitioned)."""
    if not is_partitioned(connection):
        return {}
    counted = connection.execute(
        text(f"SELECT floor(hour / 24.0)::bigint, count(*) FROM {DEFAULT_PARTITION} GROUP BY 1 ORDER BY 1")  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
    )
    return {int(day): int(rows) for day, rows in counted}


def create_days(session: Session, days: Iterable[int]) -> set[int]:
    """Create these days' partitions under the advisory lock; returns the days that now exist.

    Call only for days this role may create and DEFAULT holds no rows of (see the module's note):
    the lock is held to the end of this transaction, which must be its own and take the lock before
    anything else (a transaction that had read the table, DEFAULT's partition included, would hold a
    lock the creation waits for while waiting on the lock the creator holds: a deadlock). A creation
    that still fails (a bulk import won the race) is undone by its savepoint; that day is not returned.
    """
    wanted = sorted(set(days))
    if not wanted:
        return set()
    session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
    made = set()
    for day in wanted:
        try:
            with session.begin_nested():
                session.execute(text(_create_sql(day, if_not_exists=True)))
            made.add(day)
        except DBAPIError:  # DEFAULT took rows of this day meanwhile: they stay there, check names them
            pass
    return made


def move_default_day(session: Session, day: int) -> int:
    """Move DEFAULT's rows of one day into a new partition of that day, in the server; returns rows moved.

    One transaction: the rows are deleted from DEFAULT into a temporary table, the day's partition
    is created (DEFAULT now holds none of its range), and the rows go back through the parent, ids
    kept. The client holds no row.
    """
    lo, hi = day * DAY_HOURS, (day + 1) * DAY_HOURS
    session.execute(
        text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY}
    )  # before DEFAULT's lock, as agents
    session.execute(text(f"LOCK TABLE {DEFAULT_PARTITION} IN SHARE ROW EXCLUSIVE MODE"))
    session.execute(
        text(
            "CREATE TEMPORARY TABLE wattlog_moving ON COMMIT DROP AS WITH moved AS ("  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
            f"DELETE FROM {DEFAULT_PARTITION} WHERE {_BOTH} AND hour >= :lo AND hour < :hi RETURNING *"
            ") SELECT * FROM moved"
        ),
        {"lo": lo, "hi": hi},
    )
    session.execute(text(_create_sql(day, if_not_exists=True)))
    moved = session.execute(text(f"INSERT INTO {ENERGY.name} SELECT * FROM wattlog_moving"))  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
    session.execute(text("DROP TABLE wattlog_moving"))
    return int(moved.rowcount)  # type: ignore[attr-defined]  # a CursorResult


def _create_sql(day: int, *, if_not_exists: bool = False) -> str:
    guard = "IF NOT EXISTS " if if_not_exists else ""
    return (
        f"CREATE TABLE {guard}{partition_name(day)} PARTITION OF {ENERGY.name}"
        f" FOR VALUES FROM ({day * DAY_HOURS}) TO ({(day + 1) * DAY_HOURS})"
    )


def day_bytes(connection: Connection) -> dict[int, tuple[int, str]]:
    """Day -> (bytes on disk with indexes, "raw" | "compacted" | "empty"), per day partition."""
    if not is_partitioned(connection):
        return {}
    sizes = {}
    for day in day_partitions(connection):
        name = partition_name(day)
        raw, rows = (f"EXISTS (SELECT 1 FROM {name}{where})" for where in (" WHERE resolution = 'raw'", ""))  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
        size, has_raw, has_rows = connection.execute(
            text(f"SELECT pg_total_relation_size('{name}'), {raw}, {rows}")
        ).one()
        sizes[day] = (int(size), "raw" if has_raw else "compacted" if has_rows else "empty")
    return sizes


def whole_days(session: Session, before_hour: int) -> list[int]:
    """Days with their own partition whose hours all precede `before_hour` ([] unless partitioned)."""
    connection = session.connection()
    if not is_partitioned(connection):
        return []
    return [d for d in day_partitions(connection) if (d + 1) * DAY_HOURS <= before_hour]
