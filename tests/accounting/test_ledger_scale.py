"""The ledger at fleet scale: a flush reads only its own hosts' keys, through an index that
migration 0008 adds to an existing ledger in place (tests/integration reruns these on PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, inspect, text
from sqlalchemy.orm import Session

from tests.accounting.sqlite_work import sqlite_steps
from tests.accounting.test_ledger_engine import schema_diff
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.engine import HEAD_REVISION, MIGRATIONS
from wattlog.accounting.ledger.models import Resolution
from wattlog.accounting.ledger.writes import held_keys, keys_query
from wattlog.records import EnergyInterval, Kind, Source

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z, an hour's start


@pytest.fixture
def ledger_url(tmp_path) -> str:
    """A fresh SQLite file per test."""
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def flush(host: str, index: int, devices: int = 2) -> list[EnergyInterval]:
    """One 10 s flush of `host`: `devices` GPUs of 100 J each."""
    start = T0 + 10.0 * index
    return [
        EnergyInterval.of(host, f"gpu{d}", Kind.GPU, Source.COUNTER, start, start + 10.0, 100.0, 95.0, 105.0)
        for d in range(devices)
    ]


def test_a_flush_reads_only_its_own_hosts_keys_of_the_hour(ledger_url: str) -> None:
    ledger = Ledger(make_engine(ledger_url))
    run_id = ledger.start_run("fleet").id
    assert run_id is not None
    for host in ("node0", "node1", "node2"):
        for index in range(3):
            ledger.record_intervals(run_id, flush(host, index))
    with Session(ledger.engine) as session:
        keys = held_keys(session, run_id, flush("node1", 3))
    # before 0008 the check read all 18 rows of the hour, every host's
    assert {key[0] for key in keys} == {"node1"}
    assert len(keys) == 6
    ledger.engine.dispose()


def test_dedup_still_holds_per_host_after_the_narrower_read(ledger_url: str) -> None:
    ledger = Ledger(make_engine(ledger_url))
    ledger.start_run("fleet")
    assert ledger.record_intervals("fleet", flush("node0", 0) + flush("node1", 0)) == 4
    # a retried flush of node0 is skipped whole; node1's same devices and start are its own rows
    assert ledger.record_intervals("fleet", flush("node0", 0)) == 0
    assert ledger.record_intervals("fleet", flush("node0", 0) + flush("node1", 1)) == 2
    assert sum(total.energy_j for total in ledger.energy_totals("fleet")) == 600.0
    ledger.engine.dispose()


def test_sqlite_plans_the_held_keys_and_folded_spans_reads_on_the_host_hour_index(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'l.db'}")
    for resolution in Resolution:  # raw: held_keys; hourly: folded_spans
        query = keys_query(1, {"node1"}, 10, 11, resolution)
        compiled = query.compile(engine, compile_kwargs={"literal_binds": True})
        with engine.connect() as connection:
            plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}").fetchall()
        assert "ix_energy_run_host_resolution_hour" in " ".join(str(row) for row in plan)
    engine.dispose()


def test_a_flush_costs_the_same_whatever_other_hosts_hold_in_the_hour(ledger_url: str) -> None:
    """SQLite's work for one host's flush beside 1 and 100 other hosts' rows in the hour: before, the
    check for folded rows read every host's rows of the hour (77 ms a flush at 1,024 GPUs)."""
    ledger = Ledger(make_engine(ledger_url))
    works = []
    for others in (1, 100):
        run = f"fleet{others}"
        ledger.start_run(run)
        for host in range(others):
            ledger.record_intervals(run, [row for i in range(30) for row in flush(f"other{host}", i, 8)])
        works.append(sqlite_steps(ledger.engine, lambda: ledger.record_intervals(run, flush("node0", 30, 8))))  # noqa: B023
    assert works[1] < 2 * works[0] + 2, works
    ledger.engine.dispose()


def test_a_ledger_from_before_the_index_upgrades_in_place_keeping_every_row(
    ledger_url: str,
) -> None:
    ledger = Ledger(make_engine(ledger_url))
    ledger.start_run("fleet")
    ledger.record_intervals("fleet", flush("node0", 0) + flush("node1", 0))
    before = [(t.host, t.device, t.energy_j, t.rows) for t in ledger.energy_totals("fleet")]
    ledger.engine.dispose()
    engine = make_engine(ledger_url, migrate=False)
    downgrade(engine, "0008")  # the schema an older wattlog left, its rows kept
    assert "ix_energy_run_host_resolution_hour" not in index_names(engine)
    engine.dispose()

    engine = make_engine(ledger_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == HEAD_REVISION
    assert "ix_energy_run_host_resolution_hour" in index_names(engine)
    assert schema_diff(engine) == []
    ledger = Ledger(engine)
    assert [(t.host, t.device, t.energy_j, t.rows) for t in ledger.energy_totals("fleet")] == before
    assert ledger.record_intervals("fleet", flush("node0", 0)) == 0  # the old rows still dedupe
    engine.dispose()


def downgrade(engine: Engine, revision: str) -> None:
    """Take the ledger's schema back to `revision` with the migrations' own downgrades."""
    from alembic import command
    from alembic.config import Config

    with engine.begin() as connection:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def index_names(engine) -> set[str]:  # type: ignore[no-untyped-def]
    return {index["name"] for index in inspect(engine).get_indexes("energy_record")}


def test_nodes_that_never_reached_the_ledger_are_named_in_the_table_note() -> None:
    from wattlog.accounting.ledger.views import JobNodes

    present = [i for i in range(24) if i not in (4, 9, 10, 11, 15, 20, 23)]  # 7 refused at start
    hosts = tuple(f"node{i:02d}" for i in present)
    nodes = JobNodes(node_count=24, joined=hosts, measuring=hosts, indexes=tuple(present))
    assert nodes.describe(hosts) == (
        "17 of 24 nodes measured; 7 node(s) never reached the ledger "
        "(node 5, 10, 11, 12, 16 and 2 more of 24)"
    )
    everyone = tuple(range(24))
    full = JobNodes(24, tuple(f"n{i}" for i in everyone), tuple(f"n{i}" for i in everyone), everyone)
    assert full.describe(full.joined) == "24 of 24 nodes measured"


@pytest.mark.parametrize("silence_s", [20.0, 5 * 3600.0])
def test_downtime_before_a_restart_is_found_after_a_short_or_a_long_silence(
    ledger_url: str, silence_s: float
) -> None:
    from wattlog.accounting.publishing.gaps import run_gaps
    from wattlog.gap_reasons import GapReason

    ledger = Ledger(make_engine(ledger_url))
    ledger.start_run("fleet")
    ledger.record_intervals("fleet", flush("node0", 0) + flush("node0", 1))  # rows end at T0 + 20 s
    ledger.record_event("fleet", "restart", time_s=T0 + 20.0 + silence_s)
    ledger.record_intervals("fleet", flush("node0", int((20.0 + silence_s) / 10)))
    summary = run_gaps(ledger, "fleet")
    assert summary.by_reason()[GapReason.DOWNTIME] == (1, silence_s)
    span_s = 20.0 + silence_s + 10.0
    assert summary.widen_j == pytest.approx(600.0 / span_s * silence_s)
    ledger.engine.dispose()
