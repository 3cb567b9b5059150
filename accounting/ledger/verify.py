"""Checks of what a ledger holds, before `wattlog table` shows it or `wattlog compact` folds it.

A ledger can be damaged underneath wattlog (a disk error, a hand edit, a
copy taken mid-write). SQLite's own ``PRAGMA quick_check`` finds a broken
file; the rows are then checked for what no measurement can produce: energy
that is negative, not finite, or outside its own band, and intervals that end
before they start. The rollup must match its rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table, and_, case, func, or_, select, text
from sqlalchemy.exc import SQLAlchemyError

from wattlog.accounting.ledger.models import EnergyRecord, Run
from wattlog.accounting.ledger.partitions import DAY_HOURS, default_rows
from wattlog.accounting.ledger.rollups import (
    DEVICE_KEY,
    HOUR_KEY,
    IMPOSSIBLE_ENERGY_SQL,
    IMPOSSIBLE_SUMS_SQL,
    EnergyHourRollup,
    EnergyRollup,
    impossible_sampling_parts,
)
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.writes import rows_summed
from wattlog.accounting.progress import Progress
from wattlog.errors import LedgerError

_SHOWN = 3  # example rows named in the message


def impossible_rows(ledger: Ledger, where: str, runs: Sequence[int] | None = None) -> list[str]:
    """One line per kind of impossible content found (empty when the ledger is sound).

    With `runs`, only those runs' rows are checked and SQLite's whole-file check is skipped:
    a table reads what it shows, and scanning a month of every run cost it seconds (issue 27).
    Energy rows are found through a partial index that holds only impossible ones, so a sound
    run costs an empty index lookup, not a scan of its rows. A damaged page under the rows read
    still fails the read itself.

    Raises:
        LedgerError: The database file itself is damaged (one line naming it and what to do).
    """
    problems: list[str] = []
    try:
        with ledger.engine.connect() as connection:
            if connection.dialect.name == "sqlite" and runs is None:
                result = [row[0] for row in connection.execute(text("PRAGMA quick_check(1)"))]
                if result != ["ok"]:
                    first = (str(result[0]).strip().splitlines() or ["?"])[0]
                    raise LedgerError(
                        f"ledger {where} is damaged (SQLite quick_check: {first}): restore it from a "
                        "backup, or `sqlite3 FILE .recover` into a new file and pass that as --db"
                    )
            for table, what in (
                (EnergyRecord.__table__, "energy rows"),  # type: ignore[attr-defined]
                (EnergyRollup.__table__, "energy totals"),  # type: ignore[attr-defined]
                (EnergyHourRollup.__table__, "hourly energy sums"),  # type: ignore[attr-defined]
            ):
                problems += _bad_energy(connection, table, what, runs)
    except SQLAlchemyError as error:
        first = (str(getattr(error, "orig", error)).strip().splitlines() or ["?"])[0]
        raise LedgerError(f"ledger {where} cannot be read ({first}): restore it from a backup") from error
    return problems


def runs_with_impossible_sums(ledger: Ledger) -> list[int]:
    """The runs whose totals or hours (not rows) are impossible: what a rebuild from the rows mends."""
    runs: set[int] = set()
    with ledger.engine.connect() as connection:
        for table in (EnergyRollup.__table__, EnergyHourRollup.__table__):  # type: ignore[attr-defined]
            query = select(table.c.run_id).where(_impossible(table)).distinct()
            runs.update(connection.execute(query).scalars())
    return sorted(runs)


def check_ledger(ledger: Ledger, where: str, runs: Sequence[int] | None = None) -> None:
    """Raise if the ledger (with `runs`: those runs' rows) holds impossible content.

    Raises:
        LedgerError: One line naming the ledger, what is wrong and what to do.
    """
    problems = impossible_rows(ledger, where, runs)
    if problems:
        raise LedgerError(
            f"ledger {where} holds impossible rows: {'; '.join(problems)}; fix or delete them "
            "(or restore a backup) before reading or compacting it"
        )


def _impossible(table: Table) -> ColumnElement[bool]:
    """The condition a row of `table` (energy rows or either rollup) meets when it is impossible."""
    c = table.c
    if table is EnergyRecord.__table__:  # type: ignore[attr-defined]
        # the partial index's own text, so the query reads the index
        return text(f"({IMPOSSIBLE_ENERGY_SQL})")  # type: ignore[return-value]
    if table is EnergyHourRollup.__table__:  # type: ignore[attr-defined]
        return text(f"({IMPOSSIBLE_SUMS_SQL})")  # type: ignore[return-value]
    return or_(
        c.energy_j.is_(None),
        c.low_j.is_(None),
        c.high_j.is_(None),
        c.energy_j < 0,
        c.energy_j < c.low_j,
        c.energy_j > c.high_j,
        # a NaN compares false with everything; infinities are beyond any float bound
        c.energy_j != c.energy_j,
        c.energy_j > 1e300,
        c.high_j > 1e300,
        *([c.end_s < c.start_s] if "start_s" in c else []),
        *(impossible_sampling_parts(c) if "random_low_j" in c else []),
    )


def _bad_energy(connection, table: Table, what: str, runs: Sequence[int] | None) -> list[str]:  # type: ignore[no-untyped-def]
    c = table.c
    bad = _impossible(table)
    if runs is not None:
        bad = c.run_id.in_(list(runs)) & bad
    count = connection.execute(select(func.count()).select_from(table).where(bad)).scalar_one()
    if not count:
        return []
    examples = connection.execute(
        select(c.run_id, c.get("device", c.host), c.energy_j, c.low_j, c.high_j).where(bad).limit(_SHOWN)
    ).all()
    shown = ", ".join(
        f"run {run} {device}: {energy} J, band [{low}, {high}]" for run, device, energy, low, high in examples
    )
    return [
        f"{count} {what} with energy negative, not finite or outside its band, or a band whose "
        f"sampling-error parts lie outside it ({shown})"
    ]


def default_partition_rows(ledger: Ledger, where: str) -> str:
    """A line naming the rows the DEFAULT partition holds and the command that moves them ("" when none).

    Such rows count like any other, but their day can get no partition while they are there, so
    compaction folds them row by row (PostgreSQL; see ledger.day_plan for how they get there).
    """
    with ledger.engine.connect() as connection:
        held = default_rows(connection)
    if not held:
        return ""
    days = ", ".join(
        f"{dt.datetime.fromtimestamp(day * DAY_HOURS * 3600, dt.UTC):%Y-%m-%d} ({rows:,})"
        for day, rows in held.items()
    )
    return (
        f"ledger {where}: {sum(held.values()):,} energy rows in the DEFAULT partition (days {days}): "
        f"`wattlog partitions --db URL` (as the energy table's owner) moves them into their day partitions"
    )


DRIFT = 1e-9
"""How far, relatively, a rollup's energy may be from its rows' sum: far above the rounding of
summing a device's month of 10 s rows in another order ((n + 4) x 2^-51 = 1.2e-10 for 259,200 rows,
accounting.publishing.audit.bundle.summing_tolerance), far below one row of that month (3.9e-6)."""


def rollup_drift(ledger: Ledger, progress: Progress | None = None) -> dict[int, list[str]]:
    """Run id -> where the rollups a table reads disagree with the rows they sum: a device's energy,
    first start or last end, an hour's energy, or either without the other (empty when they agree).

    The database sums every row, a run at a time (`progress` hears how many runs are done), and
    returns only what disagrees: `wattlog check`, not a table.
    """
    drift: dict[int, list[str]] = {}
    with ledger.engine.connect() as connection:
        run_ids = connection.execute(select(Run.__table__.c.id).order_by(Run.__table__.c.id)).scalars().all()  # type: ignore[attr-defined]
        for done, run_id in enumerate(run_ids):
            if progress:
                progress(f"runs checked (of {len(run_ids):,})", done)
            for table, key, what in (
                (EnergyRollup.__table__, DEVICE_KEY, "device total"),  # type: ignore[attr-defined]
                (EnergyHourRollup.__table__, HOUR_KEY, "hourly sum"),  # type: ignore[attr-defined]
            ):
                lines = list(_table_drift(connection, table, key, what, run_id))
                if lines:
                    drift.setdefault(run_id, []).extend(lines)
    return drift


def _table_drift(
    connection: Connection, table: Table, key: Sequence[str], what: str, run_id: int
) -> Iterator[str]:
    """A line for each row of one rollup of the run that its rows' sums contradict (see rollup_drift).

    The sums and the rollup are compared in the database (a full outer join of the rows' sums with
    the rollup's rows): only disagreeing groups come back, so the client holds none of a month's
    groups (issue 41: 2.7 GB at 4,096 GPUs when both sides were read into dicts).
    """
    spans = table is EnergyRollup.__table__  # type: ignore[attr-defined]  # the device totals keep spans
    compared = ("energy_j", *(("first_start_s", "last_end_s") if spans else ()))
    sums = rows_summed(table, key, run_id).subquery("sums")
    kept = select(*(table.c[k] for k in (*key, *compared))).where(table.c.run_id == run_id).subquery("kept")
    joined = sums.join(kept, and_(*(sums.c[k] == kept.c[k] for k in key)), full=True)
    rows_j, kept_j = sums.c.energy_j, kept.c.energy_j
    larger = case((func.abs(rows_j) > func.abs(kept_j), func.abs(rows_j)), else_=func.abs(kept_j))
    differs = or_(
        sums.c.run_id.is_(None),
        kept.c.run_id.is_(None),
        func.abs(rows_j - kept_j) > DRIFT * larger,
        *(sums.c[c].is_distinct_from(kept.c[c]) for c in compared[1:]),
    )
    query = select(
        sums.c.run_id.is_not(None),
        kept.c.run_id.is_not(None),
        *(func.coalesce(sums.c[k], kept.c[k]) for k in key[1:]),
        *(sums.c[c] for c in compared),
        *(kept.c[c] for c in compared),
    ).select_from(joined)
    found = []
    for has_rows, has_kept, *values in connection.execute(query.where(differs)):
        group = tuple(values[: len(key) - 1])
        rest = values[len(key) - 1 :]
        summed = tuple(rest[: len(compared)]) if has_rows else None
        held = tuple(rest[len(compared) :]) if has_kept else None
        found.append((group, _drifted(summed, held)))
    for group, problem in sorted(found, key=lambda f: str(f[0])):
        if problem:
            yield f"{what} {'/'.join(map(str, group))}: {problem}"


def _drifted(rows: tuple[Any, ...] | None, kept: tuple[Any, ...] | None) -> str:
    """What is wrong with one rollup row against its rows' sums ("" when nothing)."""
    if rows is None or kept is None:
        return "kept, but no rows" if rows is None else "rows, but not kept"
    (rows_j, *rows_span), (kept_j, *kept_span) = rows, kept
    if abs(rows_j - kept_j) > DRIFT * max(abs(rows_j), abs(kept_j)):
        return f"kept {kept_j} J, rows sum to {rows_j} J"
    if rows_span != kept_span:
        return f"kept span {kept_span}, rows span {rows_span}"
    return ""
