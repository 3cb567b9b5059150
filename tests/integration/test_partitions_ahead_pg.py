"""Day partitions made ahead, and rows in DEFAULT that never cost a flush (issue 41), on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import Engine, event, text

from tests.accounting.test_ledger_store import interval
from tests.integration.test_postgres_ledger import postgres_server  # noqa: F401  (session fixture)
from wattlog.accounting.ledger import Connections, Ledger, make_engine
from wattlog.accounting.ledger.partitions import DEFAULT_PARTITION, day_partitions, partition_name
from wattlog.cli import main
from wattlog.clock import FakeClock

pytestmark = pytest.mark.integration

DAY0 = 20_000  # days since the epoch (2024-10-04)
FLUSHES = 30


@contextmanager
def server_calls(engine: Engine) -> Iterator[dict[str, int]]:
    """Count the statements the server failed and the advisory locks taken through `engine`."""
    seen = {"errors": 0, "locks": 0, "statements": 0}

    def failed(_context: object) -> None:
        seen["errors"] += 1

    def executed(_conn, _cursor, statement, *_args) -> None:  # type: ignore[no-untyped-def]
        seen["statements"] += 1
        seen["locks"] += "pg_advisory" in statement

    event.listen(engine, "handle_error", failed)
    event.listen(engine, "before_cursor_execute", executed)
    yield seen
    event.remove(engine, "handle_error", failed)
    event.remove(engine, "before_cursor_execute", executed)


def _agent(url: str, day: int) -> Ledger:
    """An agent's ledger: one connection per transaction (as behind pgbouncer), its clock on `day`."""
    engine = make_engine(url, migrate=False, connections=Connections(hold=False))
    return Ledger(engine, clock=FakeClock(wall_offset_s=day * 86_400.0 + 600))


def _flush_day(ledger: Ledger, run: str, day: int) -> None:
    """FLUSHES flushes of one GPU's 10 s rows at 10 s, in the middle of `day`."""
    t0 = day * 86_400.0 + 40_000
    for i in range(FLUSHES):
        assert ledger.record_intervals(run, [interval(f"gpu{d}", t0 + 10 * i, 700.0) for d in range(8)]) == 8


def _in_default(url: str) -> int:
    engine = make_engine(url, migrate=False)
    with engine.connect() as connection:
        rows = connection.execute(text(f"SELECT count(*) FROM {DEFAULT_PARTITION}")).scalar_one()
    engine.dispose()
    return int(rows)


def test_a_day_a_bulk_import_put_in_default_costs_its_flushes_nothing(postgres_server) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    url = postgres_server.create_database()
    owner = Ledger(make_engine(url), clock=FakeClock(wall_offset_s=DAY0 * 86_400.0))
    owner.start_run("r")
    day = DAY0 + 5  # no partition yet: an import's row of it lands in DEFAULT
    with owner.transaction("bulk import") as session:
        session.execute(
            text(
                "INSERT INTO energy_record (run_id, host, device, kind, source, resolution, hour, start_s,"
                " end_s, energy_j, low_j, high_j) SELECT id, 'old', 'gpu0', 'gpu', 'counter', 'raw',"
                " :h, :t, :t + 10, 7000, 6650, 7350 FROM run"
            ),
            {"h": day * 24 + 1, "t": day * 86_400.0 + 3600},
        )
    agent = _agent(url, day)
    with server_calls(agent.engine) as seen:
        _flush_day(agent, "r", day)
    # 38e5f82: every flush took the advisory lock and the server failed its CREATE TABLE (30 and 30)
    assert (seen["errors"], seen["locks"]) == (0, 0)
    assert seen["statements"] <= FLUSHES * 12  # no per-flush catalog reads beyond the flush's own
    assert _in_default(url) == 1 + 8 * FLUSHES


def test_an_agent_without_create_flushes_and_check_names_the_command_that_moves(  # type: ignore[no-untyped-def]
    postgres_server,  # noqa: F811
    capsys,
) -> None:
    url = postgres_server.create_database()
    owner = Ledger(make_engine(url), clock=FakeClock(wall_offset_s=DAY0 * 86_400.0))
    owner.start_run("r")
    with owner.transaction("an agents' role: rows, no CREATE") as session:
        role = "CREATE ROLE agent LOGIN; EXCEPTION WHEN duplicate_object THEN"  # the server is shared
        session.execute(text(f"DO $$ BEGIN {role} END $$"))
        session.execute(text("GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO agent"))
        session.execute(text("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO agent"))
    day = DAY0 + 7
    agent = _agent(url.replace("postgres@", "agent@"), day)
    with server_calls(agent.engine) as seen:
        _flush_day(agent, "r", day)
    assert (seen["errors"], seen["locks"]) == (0, 0)  # 38e5f82: permission denied at every flush
    assert _in_default(url) == 8 * FLUSHES
    totals = sorted((t.device, t.energy_j) for t in owner.energy_totals("r"))
    assert main(["check", "--db", url]) == 2
    err = capsys.readouterr().err
    assert f"{8 * FLUSHES} energy rows in the DEFAULT partition (days 2024-10-11 ({8 * FLUSHES}))" in err
    assert "`wattlog partitions --db URL`" in err
    assert main(["partitions", "--db", url, "--ahead-days", "0"]) == 0
    assert f"day {day}: {8 * FLUSHES}" in capsys.readouterr().out
    assert _in_default(url) == 0
    with owner.engine.connect() as connection:
        assert day in day_partitions(connection)
        moved = connection.execute(text(f"SELECT count(*) FROM {partition_name(day)}")).scalar_one()
    assert moved == 8 * FLUSHES
    assert sorted((t.device, t.energy_j) for t in owner.energy_totals("r")) == totals
    assert main(["check", "--db", url]) == 0


def test_a_run_makes_its_days_ahead(postgres_server) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    url = postgres_server.create_database()
    clock = FakeClock(wall_offset_s=DAY0 * 86_400.0 + 43_200)
    ledger = Ledger(make_engine(url), clock=clock)
    ledger.start_run("r")
    with ledger.engine.connect() as connection:
        assert day_partitions(connection) == [DAY0, DAY0 + 1]  # today and tomorrow, before any row
    last_hour_s = (DAY0 + 1) * 86_400.0 + 23 * 3600 + 5
    ledger.record_intervals("r", [interval("gpu0", last_hour_s, 7000.0)])  # a day's last hour: next day
    with ledger.engine.connect() as connection:
        assert day_partitions(connection) == [DAY0, DAY0 + 1, DAY0 + 2]
    assert _in_default(url) == 0


def test_compact_prints_what_raw_retention_costs(postgres_server, capsys) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    url = postgres_server.create_database()
    ledger = Ledger(make_engine(url), clock=FakeClock(wall_offset_s=DAY0 * 86_400.0))
    ledger.start_run("r")
    ledger.record_intervals("r", [interval("gpu0", DAY0 * 86_400.0 + 10 * i, 7000.0) for i in range(50)])
    ledger.engine.dispose()
    assert main(["compact", "--db", url, "--older-than-days", "36500"]) == 0  # keeps every raw row
    out = capsys.readouterr().out
    assert "0 raw rows folded" in out and "raw retention 36500 days: 1 day(s) still raw," in out
    assert main(["compact", "--db", url, "--older-than-days", "1"]) == 0  # 2024's days are long past
    assert "raw retention 1 days: 0 day(s) still raw, 0.00 GiB" in capsys.readouterr().out
