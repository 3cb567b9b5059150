"""Compaction and `wattlog check` done by PostgreSQL: same results as Python's, rows kept in the server."""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, event, text

from bench.fleet_day import fill_day
from tests.integration.test_postgres_ledger import postgres_server  # noqa: F401  (session fixture)
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.compaction import fold_rows
from wattlog.accounting.ledger.verify import rollup_drift
from wattlog.cli import main
from wattlog.records import EnergyInterval, Kind, Source

pytestmark = pytest.mark.integration

DAY0 = 20_100
_days = itertools.count(DAY0)
_KEYS = ("host", "device", "kind", "source", "hour")
_HOUR_COLUMNS = "run_id, hour, host, kind, source, energy_j, low_j, high_j"


@pytest.fixture(scope="module")
def shared_url(postgres_server) -> str:  # type: ignore[no-untyped-def]  # noqa: F811
    return str(postgres_server.create_database())


@pytest.fixture(scope="module")
def shared(shared_url: str) -> Iterator[Ledger]:
    """One ledger (one pool) for every example."""
    ledger = Ledger(make_engine(shared_url))
    yield ledger
    ledger.engine.dispose()


@contextmanager
def rows_received(engine: Engine) -> Iterator[list[int]]:
    """Count the rows the server sends the client through `engine` (psycopg's rowcount of a SELECT)."""
    got = [0]

    def counted(_conn, cursor, statement, *_args) -> None:  # type: ignore[no-untyped-def]
        if statement.lstrip().upper().startswith(("SELECT", "WITH")) and cursor.rowcount > 0:
            got[0] += cursor.rowcount

    event.listen(engine, "after_cursor_execute", counted)
    yield got
    event.remove(engine, "after_cursor_execute", counted)


stretch = st.tuples(st.integers(0, 2), st.integers(0, 1), st.integers(0, 340), st.integers(1, 30))


@settings(
    max_examples=12,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(stretch, min_size=1, max_size=25))
def test_the_server_folds_as_fold_rows_does(shared: Ledger, stretches: list[tuple[int, ...]]) -> None:
    """Rows with holes, overlaps and two sources: the server's hourly rows are fold_rows' to the bit."""
    day, ledger = next(_days), shared
    run = ledger.start_run(f"r{day}", start_s=day * 86_400.0)
    assert run.id is not None
    rows = []
    for host, source, first, count in stretches:  # `count` 10 s rows from step `first` (may touch others)
        for step in range(first, first + count):
            start_s = day * 86_400.0 + 10.0 * step + (0.5 if source else 0.0)
            energy = 700.0 + step % 13 + host
            rows.append(
                EnergyInterval.of(
                    f"n{host}", "gpu0", Kind.GPU, (Source.COUNTER, Source.SAMPLED)[source],
                    start_s, start_s + 10.0, energy, energy * 0.95, energy * 1.05,
                )
            )  # fmt: skip
    ledger.record_intervals(run.id, rows)
    with ledger.engine.connect() as connection:
        stored = [
            dict(r._mapping)
            for r in connection.execute(text(f"SELECT * FROM energy_record WHERE run_id = {run.id}"))
        ]
    columns = (
        "run_id",
        *_KEYS,
        "start_s",
        "end_s",
        "energy_j",
        "low_j",
        "high_j",
        "random_low_j",
        "random_high_j",
        "random_low_sq",
        "random_high_sq",
    )
    expected = fold_rows([{c: r[c] for c in columns} for r in stored])
    ledger.compact_hourly(0, now_s=(day + 1) * 86_400.0)
    with ledger.engine.connect() as connection:
        got = [
            dict(r._mapping)
            for r in connection.execute(text(f"SELECT * FROM energy_record WHERE run_id = {run.id}"))
        ]
    ledger.engine.dispose()

    def key(r: dict[str, object]) -> tuple[object, ...]:
        return tuple(r[c] for c in (*_KEYS, "start_s", "end_s"))

    assert {r["resolution"] for r in got} == {"hourly"}
    assert sorted(map(key, got)) == sorted(map(key, expected))  # the same stretches
    by_key = {key(r): r for r in expected}
    for row in got:
        for name in ("energy_j", "low_j", "high_j"):
            assert row[name] == pytest.approx(by_key[key(row)][name], rel=1e-12)


def test_compaction_and_check_keep_the_rows_in_the_server(shared_url: str) -> None:
    """100,000 raw rows of a day: the client neither receives them nor holds their groups."""
    day = next(_days) + 400
    run = fill_day(shared_url, 100_000, day)
    ledger = Ledger(make_engine(shared_url, migrate=False))  # its own pool: only this test's statements
    with ledger.engine.connect() as connection:
        joules = connection.execute(
            text(f"SELECT sum(energy_j) FROM energy_record WHERE run_id = {run}")
        ).scalar_one()
    with rows_received(ledger.engine) as received:
        assert rollup_drift(ledger) == {}
    assert received[0] < 50  # the run ids; 38e5f82 read every group of both rollups (411 here)
    tracemalloc.start()
    with rows_received(ledger.engine) as received:
        done = ledger.compact_hourly(0, now_s=(day + 1) * 86_400.0)
    peak_b = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert done.raw_rows == 100_000 and 0 < done.hourly_rows < 2_000
    assert received[0] < 200  # 38e5f82: the 100,000 raw rows came to the client
    assert peak_b < 8 * 2**20
    with ledger.engine.connect() as connection:
        after = connection.execute(
            text(f"SELECT sum(energy_j) FROM energy_record WHERE run_id = {run}")
        ).scalar_one()
    assert after == pytest.approx(joules, rel=1e-12, abs=1e-6)  # to the joule, and far finer
    assert rollup_drift(ledger) == {}
    ledger.engine.dispose()


def test_check_finds_and_repairs_drift_on_postgresql_as_on_sqlite(postgres_server, capsys) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    url = postgres_server.create_database()
    ledger = Ledger(make_engine(url))
    ledger.start_run("r")
    rows = [
        EnergyInterval.of(
            "n", f"gpu{i % 4}", Kind.GPU, Source.COUNTER, 10.0 * i, 10.0 * (i + 1), 5e3, 4.9e3, 5.1e3
        )
        for i in range(400)
    ]
    ledger.record_intervals("r", rows)
    with ledger.transaction("damage the rollups") as session:
        session.execute(text("UPDATE energy_total SET energy_j = energy_j + 50 WHERE device = 'gpu1'"))
        session.execute(text("UPDATE energy_total SET last_end_s = 99999 WHERE device = 'gpu2'"))
        session.execute(text("DELETE FROM energy_hour WHERE hour = 0"))
        kept_only = "SELECT id, 7, 'n', 'gpu', 'counter', 1, 1, 1 FROM run"  # an hour kept without rows
        session.execute(text(f"INSERT INTO energy_hour ({_HOUR_COLUMNS}) {kept_only}"))
    ledger.engine.dispose()
    assert main(["check", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "device total n/gpu1/gpu/counter: kept 500050.0 J, rows sum to 500000.0 J" in err
    assert "device total n/gpu2/gpu/counter: kept span [20.0, 99999.0], rows span [20.0, 3990.0]" in err
    assert "hourly sum 0/n/gpu/counter: rows, but not kept" in err
    assert "and 1 more" in err  # the hour kept without rows
    assert main(["check", "--db", url, "--repair"]) == 0
    assert main(["check", "--db", url]) == 0
    assert "every total and hour agrees with its rows" in capsys.readouterr().out
