"""PostgreSQL's energy table partitioned by day (revision 0014): migration, writes, compaction by swap."""

from __future__ import annotations

from collections import defaultdict

import pytest
from sqlalchemy import Connection, create_engine, func, select, text
from sqlalchemy.orm import Session

from tests.accounting.test_ledger_store import interval
from tests.integration.test_postgres_ledger import postgres_server  # noqa: F401  (session fixture)
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.engine import MIGRATIONS
from wattlog.accounting.ledger.models import EnergyRecord
from wattlog.accounting.ledger.partitions import day_partitions, partition_name
from wattlog.records import Kind, Source

pytestmark = pytest.mark.integration

DAY0 = 20_000  # days since the epoch (2024-10-04)
START = DAY0 * 86_400.0 + 1234.5


def _alembic(connection: Connection, verb: str, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    getattr(command, verb)(config, revision)


def _fill(ledger: Ledger, days: int = 2, every_s: float = 600.0) -> int:
    """Rows of two GPUs and a CPU every `every_s` over `days` days, flushed an hour at a time."""
    run = ledger.start_run("r")
    rows = [
        interval(
            f"gpu{d}", START + every_s * i, 100.0 + 0.37 * i + d, length_s=every_s, source=Source.SAMPLED
        )
        for i in range(int(days * 86_400 / every_s))
        for d in range(2)
    ]
    rows += [
        interval("cpu", START + every_s * i, 55.5, kind=Kind.CPU, length_s=every_s, source=Source.ESTIMATED)
        for i in range(int(days * 86_400 / every_s))
    ]
    rows.sort(key=lambda r: r.start_s)
    for i in range(0, len(rows), 180):
        ledger.record_intervals(run.id, rows[i : i + 180])
    assert run.id is not None
    return run.id


def _sums(ledger: Ledger) -> dict[str, dict[tuple[object, ...], float]]:
    """Joules per run, per (run, device, source) and per (run, hour), read from the rows themselves."""
    out: dict[str, dict[tuple[object, ...], float]] = defaultdict(dict)
    e = EnergyRecord.__table__.c  # type: ignore[attr-defined]
    with Session(ledger.engine) as session:
        for name, keys in (
            ("run", (e.run_id,)),
            ("device", (e.run_id, e.device, e.source)),
            ("hour", (e.run_id, e.hour)),
        ):
            for *key, joules in session.execute(select(*keys, func.sum(e.energy_j)).group_by(*keys)):
                out[name][tuple(key)] = joules
    return out


def _rows(ledger: Ledger) -> list[tuple[object, ...]]:
    with Session(ledger.engine) as session:
        return list(session.execute(text("SELECT * FROM energy_record ORDER BY id")))


def _partitions(ledger: Ledger) -> list[int]:
    with ledger.engine.connect() as connection:
        return day_partitions(connection)


def test_migration_moves_every_row_and_round_trips(postgres_server) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    url = postgres_server.create_database()
    _fill(Ledger(make_engine(url)))
    engine = create_engine(url)
    with engine.begin() as connection:  # the plain table an older wattlog left, its rows kept
        _alembic(connection, "downgrade", "0013")
    plain = Ledger(make_engine(url, migrate=False))
    rows, sums = _rows(plain), _sums(plain)
    assert _partitions(plain) == []
    with engine.begin() as connection:
        _alembic(connection, "upgrade", "0014")
    assert _rows(plain) == rows and _sums(plain) == sums
    assert _partitions(plain) == [DAY0, DAY0 + 1, DAY0 + 2]  # START + 2 days ends on the third day
    with engine.begin() as connection:  # down to a plain table and up again, nothing lost
        _alembic(connection, "downgrade", "0013")
        assert connection.execute(text("SELECT count(*) FROM pg_partitioned_table")).scalar_one() == 0
        _alembic(connection, "upgrade", "0014")
    assert _rows(plain) == rows and _sums(plain) == sums
    # the id sequence survived the swaps: a new row gets a fresh id
    assert Ledger(make_engine(url)).record_intervals("r", [interval("gpu9", START + 86_400 * 5, 1.0)]) == 1
    assert _partitions(plain)[-1] == DAY0 + 5
    engine.dispose()


def test_writes_create_their_day_and_resends_insert_nothing(postgres_server) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    ledger = Ledger(make_engine(postgres_server.create_database()))
    run = ledger.start_run("r")
    rows = [interval("gpu0", START + 86_400 * 3 + 10 * i, 5.0) for i in range(4)]
    assert ledger.record_intervals(run.id, rows) == 4
    assert ledger.record_intervals(run.id, rows) == 0  # a resend across the partitioned table
    assert DAY0 + 3 in _partitions(ledger)  # beside the days the run's start made ahead (its clock's)
    with Session(ledger.engine) as session:
        held = session.execute(text(f"SELECT count(*) FROM {partition_name(DAY0 + 3)}")).scalar_one()
        default = session.execute(text("SELECT count(*) FROM energy_record_default")).scalar_one()
    assert (held, default) == (4, 0)


def test_compaction_drops_raw_days_and_keeps_totals(postgres_server) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    ledger = Ledger(make_engine(postgres_server.create_database()))
    run = _fill(ledger, every_s=60.0)
    sums, totals = _sums(ledger), ledger.energy_totals(run)
    name0 = partition_name(DAY0)
    with Session(ledger.engine) as session:
        old_file, old_size = session.execute(
            text(f"SELECT pg_relation_filepath('{name0}'), pg_total_relation_size('{name0}')")
        ).one()
    now_s = (DAY0 + 2) * 86_400.0 + 600  # days DAY0 and DAY0 + 1 are whole and past
    done = ledger.compact_hourly(0, now_s=now_s)
    assert done.raw_rows > 0 and done.hourly_rows < done.raw_rows
    after = _sums(ledger)
    for name in ("run", "device", "hour"):
        assert after[name].keys() == sums[name].keys()
        for key, joules in sums[name].items():
            assert after[name][key] == pytest.approx(joules, rel=1e-12, abs=1e-9), (name, key)
    assert ledger.energy_totals(run) == totals
    with Session(ledger.engine) as session:
        new_file, new_size = session.execute(
            text(f"SELECT pg_relation_filepath('{name0}'), pg_total_relation_size('{name0}')")
        ).one()
        raw_days = session.execute(
            text("SELECT DISTINCT hour / 24 FROM energy_record WHERE resolution = 'raw'")
        ).scalars()
        assert sorted(raw_days) == [DAY0 + 2]
    # the raw day's storage is gone (TRUNCATE gives the partition a new file), the hourly rows are small
    assert new_file != old_file and new_size < old_size / 4
    assert {DAY0, DAY0 + 1, DAY0 + 2} <= set(_partitions(ledger))  # the day's partition holds its hours
    assert ledger.compact_hourly(0, now_s=now_s).raw_rows == 0


def test_the_creation_lock_is_taken_before_the_energy_table_is_touched_in_its_transaction(
    request: pytest.FixtureRequest,
) -> None:
    """A transaction that read DEFAULT's partition, then waited on the creation lock, held what the
    creator needed: 16 agents starting at once on one PostgreSQL ledger failed "deadlock detected"."""
    from sqlalchemy import event

    engine = make_engine(request.getfixturevalue("postgres_server").create_database())
    transactions: list[list[str]] = []
    event.listen(engine, "begin", lambda connection: transactions.append([]))
    event.listen(
        engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, *rest: transactions and transactions[-1].append(statement),
    )
    Ledger(engine).start_run("r")  # makes its days ahead
    locked = [t for t in transactions if any("pg_advisory_xact_lock" in s for s in t)]
    assert locked, transactions
    for statements in locked:
        before = statements[: next(i for i, s in enumerate(statements) if "pg_advisory_xact_lock" in s)]
        assert not [s for s in before if "energy_record" in s], statements
    engine.dispose()
