"""The ledger's write path: a flush's energy rows and gaps, each once, and the per-device rollup.

Each function works inside a transaction the caller opened (see `Ledger.transaction`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, Select, Table, delete, func, insert, select
from sqlalchemy.orm import Session

from wattlog.accounting.ledger.models import REASON_CHARS, Event, GapRecord, Resolution, hour_of, stretch_row
from wattlog.accounting.ledger.reader import ENERGY, HOURS, ROLLUP
from wattlog.accounting.ledger.revisions import add_revisions_to_rollup
from wattlog.accounting.ledger.rollups import DEVICE_KEY, HOUR_KEY
from wattlog.errors import ConfigError, LedgerError
from wattlog.records import BAND_TERMS, EnergyInterval, Gap, band_terms


def check_flush(intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
    """Refuse an inconsistent flush before anything is written.

    Raises:
        ConfigError: A row or gap is inconsistent (end before start, negative or non-finite energy).
    """
    for row in intervals:
        check_interval(row)
    for gap in gaps:
        if not gap.end_s >= gap.start_s:
            raise ConfigError(f"gap of {gap.device} ends before it starts ({gap.start_s} > {gap.end_s})")


def store_flush(
    session: Session, run_id: int, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]
) -> int:
    """Insert the rows and gaps the run lacks and add the rows to the rollup; returns rows written."""
    intervals = new_intervals(session, run_id, intervals)
    gaps = new_gaps(session, run_id, gaps)
    if intervals:
        stored = [energy_row(run_id, row) for row in intervals]
        session.execute(insert(ENERGY), stored)
        add_to_rollup(session, stored)
    if gaps:
        session.execute(insert(GapRecord), [stretch_row(run_id, g) for g in gaps])
    return len(intervals)


def rebuild_rollup(session: Session, run_id: int | None) -> int:
    """Recompute the rollups of one run (None: of every run) from its energy rows: the device totals
    (with the band revisions) and the hours; returns device-total rows."""
    _rebuild(session, HOURS, HOUR_KEY, run_id)
    rows = _rebuild(session, ROLLUP, DEVICE_KEY, run_id)
    add_revisions_to_rollup(session, run_id)  # the band revisions stored beside the rows
    return rows


def _rebuild(session: Session, table: Table, key: Sequence[str], run_id: int | None) -> int:
    """Replace `table`'s rows (of one run, or all) by the energy rows summed by `key`."""
    wipe = delete(table)
    if run_id is not None:
        wipe = wipe.where(table.c.run_id == run_id)
    session.execute(wipe)
    summed = rows_summed(table, key, run_id)
    # summed and inserted by the database: a month of 2,048 nodes is millions of hours, none in the client
    session.execute(insert(table).from_select([c.name for c in summed.selected_columns], summed))
    # counted, not the cursor's rowcount: psycopg reports -1 for an INSERT ... SELECT here
    written = select(func.count()).select_from(table)
    if run_id is not None:
        written = written.where(table.c.run_id == run_id)
    return int(session.execute(written).scalar_one())


def rows_summed(table: Table, key: Sequence[str], run_id: int | None) -> Select[Any]:
    """The energy rows of a run (None: of every run) summed by `key` as rollup `table` keeps them, each
    column named as the table names it: what a rebuild writes and `wattlog check` compares."""
    e = ENERGY.c
    sums: list[ColumnElement[Any]] = [func.sum(e[k]).label(k) for k in ("energy_j", *BAND_TERMS)]
    if table is ROLLUP:  # the device totals: also the rows counted, their span and seconds
        sums += [
            func.count().label("records"),
            func.min(e.start_s).label("first_start_s"),
            func.max(e.end_s).label("last_end_s"),
            func.sum(e.end_s - e.start_s).label("seconds"),
        ]
    query = select(*(e[k] for k in key), *sums).group_by(*(e[k] for k in key))
    return query if run_id is None else query.where(e.run_id == run_id)


def new_intervals(session: Session, run_id: int, intervals: Sequence[EnergyInterval]) -> list[EnergyInterval]:
    """The rows of `intervals` the run does not hold yet (by interval key), each once."""
    if not intervals:
        return []
    held = held_keys(session, run_id, intervals)
    hours = {hour_of(row.start_s) for row in intervals}
    folded = folded_spans(session, run_id, {row.host for row in intervals}, min(hours), max(hours))
    fresh = []
    for row in intervals:
        key = (row.host, row.device, str(row.source), row.start_s)
        spans = folded.get(key[:3], ())
        if any(lo <= row.start_s and row.end_s <= hi for lo, hi in spans):
            continue  # folded by a compaction: replaying it again would count it twice
        if key not in held:
            held.add(key)
            fresh.append(row)
    return fresh


def folded_spans(
    session: Session, run_id: int, hosts: Iterable[str], first_hour: int, last_hour: int
) -> dict[tuple[str, str, str], list[tuple[float, float]]]:
    """(start, end) of each hourly row of `hosts` in these hours by (host, device, source): what
    compaction folded. The flushing hosts' only, as held_keys reads: SQLite otherwise planned on the
    hour index and read every host's raw rows of the hour (a 1,024-GPU hour: 77 ms of each flush)."""
    query = keys_query(run_id, hosts, first_hour, last_hour, Resolution.HOURLY)
    spans: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for host, device, source, start_s, end_s in session.execute(query.add_columns(ENERGY.c.end_s)):
        spans.setdefault((host, device, source), []).append((start_s, end_s))
    return spans


def held_keys(session: Session, run_id: int, intervals: Sequence[EnergyInterval]) -> set[tuple[Any, ...]]:
    """The keys (host, device, source, start) the run holds in the hours and hosts of `intervals`.

    Only the flushing hosts' rows are read (index ix_energy_run_host_resolution_hour): reading the whole
    hour of every host cost a flush 6.8 s and the agent 798 MiB at 1,000 nodes (issue 27).
    """
    hours = {hour_of(row.start_s) for row in intervals}
    query = keys_query(run_id, {row.host for row in intervals}, min(hours), max(hours))
    return {tuple(key) for key in session.execute(query)}


def keys_query(
    run_id: int,
    hosts: Iterable[str],
    first_hour: int,
    last_hour: int,
    resolution: Resolution = Resolution.RAW,
) -> Select[Any]:
    """The select of the row keys (host, device, source, start) of `hosts` in hours first..last of
    the run, raw (see held_keys) or hourly (folded_spans): index ix_energy_run_host_resolution_hour."""
    e = ENERGY.c
    return select(e.host, e.device, e.source, e.start_s).where(
        (e.run_id == run_id)
        & e.host.in_(sorted(hosts))
        & e.hour.between(first_hour, last_hour)
        & (e.resolution == resolution.value)
    )


def new_gaps(session: Session, run_id: int, gaps: Sequence[Gap]) -> list[Gap]:
    """The gaps the run does not hold yet (same host, device, start and reason), each once."""
    if not gaps:
        return []
    g = cast(Table, GapRecord.__table__).c  # type: ignore[attr-defined]
    lo, hi = min(gap.start_s for gap in gaps), max(gap.start_s for gap in gaps)
    query = select(g.host, g.device, g.start_s, g.reason).where(
        (g.run_id == run_id) & g.start_s.between(lo, hi)
    )
    held = {tuple(key) for key in session.execute(query)}
    fresh = []
    for gap in gaps:
        key = (gap.host, gap.device, gap.start_s, gap.reason[:REASON_CHARS])
        if key not in held:
            held.add(key)
            fresh.append(gap)
    return fresh


def store_events_once(session: Session, run_id: int, events: Sequence[Mapping[str, Any]]) -> int:
    """Insert the events (record_event's keywords) the run lacks (same kind, time, step); returns how many."""
    if not events:
        return 0
    table = cast(Table, Event.__table__).c  # type: ignore[attr-defined]
    times = [float(e["time_s"]) for e in events]
    query = select(table.kind, table.time_s, table.step).where(
        (table.run_id == run_id) & table.time_s.between(min(times), max(times))
    )
    held = {tuple(key) for key in session.execute(query)}
    fresh = []
    for event in events:
        key = (event["kind"], float(event["time_s"]), event.get("step"))
        if key not in held:
            held.add(key)
            fresh.append({"run_id": run_id, "category": "", "payload": {}, **event})
    if fresh:
        session.execute(insert(Event), fresh)
    return len(fresh)


def check_interval(row: EnergyInterval) -> None:
    if not (math.isfinite(row.energy_j) and math.isfinite(row.low_j) and math.isfinite(row.high_j)):
        raise ConfigError(f"energy of {row.device} is not finite ({row.energy_j} J)")
    if row.energy_j < 0 or not row.low_j <= row.energy_j <= row.high_j:
        raise ConfigError(
            f"energy of {row.device} must satisfy 0 <= low <= energy <= high, got "
            f"{row.low_j} <= {row.energy_j} <= {row.high_j} J"
        )
    if not row.end_s >= row.start_s:
        raise ConfigError(f"interval of {row.device} ends before it starts ({row.start_s} > {row.end_s})")
    # a sampling-error part lies inside its side of the band (so a sum never narrows past the
    # energy), to rounding: a side that is all sampling error equals its part only to the last bit
    slack_j = 1e-9 * max(row.energy_j, 1.0)
    low_room_j, high_room_j = row.energy_j - row.low_j + slack_j, row.high_j - row.energy_j + slack_j
    random_low_j, random_high_j = row.figure.random_low_j, row.figure.random_high_j
    if not (0.0 <= random_low_j <= low_room_j and 0.0 <= random_high_j <= high_room_j):
        raise ConfigError(
            f"band parts of {row.device} must lie inside the band, got {random_low_j} J below "
            f"and {random_high_j} J above {row.low_j} <= {row.energy_j} <= {row.high_j} J"
        )


def add_to_rollup(session: Session, stored: Sequence[dict[str, Any]]) -> None:
    """Add a flush's rows (as inserted) to the device totals and to the hours, one upsert each
    (SQLite and PostgreSQL)."""
    _add_sums(session, ROLLUP, DEVICE_KEY, stored)
    _add_sums(session, HOURS, HOUR_KEY, stored)


def _add_sums(session: Session, table: Table, key: Sequence[str], stored: Sequence[dict[str, Any]]) -> None:
    """Add the rows' energy and band terms by `key`; where `table` is the device totals, also count
    the rows and their seconds and widen the span to theirs."""
    added = ("energy_j", *BAND_TERMS)
    devices = table is ROLLUP
    sums: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in stored:
        group = tuple(row[k] for k in key)
        acc = sums.get(group)
        if acc is None:
            acc = sums[group] = dict.fromkeys(added, 0.0)
            if devices:
                acc.update(records=0, seconds=0.0, first_start_s=row["start_s"], last_end_s=row["end_s"])
        for name in added:
            acc[name] += row[name]
        if devices:
            acc["records"] += 1
            acc["seconds"] += row["end_s"] - row["start_s"]
            acc["first_start_s"] = min(acc["first_start_s"], row["start_s"])
            acc["last_end_s"] = max(acc["last_end_s"], row["end_s"])
    values = [{**dict(zip(key, group, strict=True)), **acc} for group, acc in sums.items()]
    statement = upsert_into(session, table).values(values)
    new = statement.excluded
    summed = (*added, "records", "seconds") if devices else added
    updates = {name: table.c[name] + new[name] for name in summed}
    if devices:
        least, greatest = _extremes(session)
        first, last = table.c.first_start_s, table.c.last_end_s
        updates[first.name] = least(func.coalesce(first, new.first_start_s), new.first_start_s)
        updates[last.name] = greatest(func.coalesce(last, new.last_end_s), new.last_end_s)
    statement = statement.on_conflict_do_update(index_elements=list(key), set_=updates)
    session.execute(statement)


def _extremes(session: Session) -> tuple[Any, Any]:
    """The smaller and the larger of two values: SQLite's scalar min and max, PostgreSQL's LEAST
    and GREATEST (min and max are aggregates there)."""
    if session.get_bind().dialect.name == "postgresql":
        return func.least, func.greatest
    return func.min, func.max


def upsert_into(session: Session, table: Table) -> Any:
    """An INSERT on `table` that supports ``on_conflict_do_update`` (SQLite and PostgreSQL).

    Raises:
        LedgerError: Another database.
    """
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)
    raise LedgerError(f"the ledger supports SQLite and PostgreSQL, not {dialect}")


def energy_row(run_id: int | None, row: EnergyInterval) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "host": row.host,
        "device": row.device,
        "kind": str(row.kind),
        "source": str(row.source),
        "resolution": Resolution.RAW.value,
        "hour": hour_of(row.start_s),
        "start_s": row.start_s,
        "end_s": row.end_s,
        "energy_j": row.energy_j,
        **dict(zip(BAND_TERMS, band_terms(row), strict=True)),
    }
