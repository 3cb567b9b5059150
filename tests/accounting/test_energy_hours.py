"""A run's hours (hourly rollup, 0016) and its devices' spans (device totals, 0017) are kept with
every flush, never read from its rows: a table with an hourly intensity over a week of raw 10 s rows
read 62 M rows for 1,024 GPUs (about 6 s on SQLite), its spans a million (the last raw hours).
tests/integration/test_ledger_scale_pg.py reruns these on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import Engine, event, insert, text

from tests.accounting.test_ledger_scale import downgrade
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.admin import delete_run
from wattlog.accounting.ledger.reader import HOURS
from wattlog.accounting.ledger.rollups import IMPOSSIBLE_ENERGY_SQL, IMPOSSIBLE_SUMS_SQL
from wattlog.accounting.ledger.run_energy import ledger_energy
from wattlog.accounting.ledger.verify import check_ledger, rollup_drift
from wattlog.errors import LedgerError
from wattlog.records import EnergyInterval, Kind, Source

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z, an hour's start
DEVICES = [
    (host, device)
    for host in ("n0", "n1")
    for device in ("bmc", "cpu", "gpu0")
    if (host, device) != ("n0", "bmc")
]
LATE = (T0 + 5 * 3_600.0, T0 + 5 * 3_600.0 + 10.0)


@pytest.fixture
def ledger_url(tmp_path) -> str:
    """A fresh SQLite file per test."""
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def fill(ledger: Ledger, run: str = "r") -> None:
    """Two hosts, a GPU and a CPU each, 10 min rows over 3 hours; host n1 also has a node meter."""
    ledger.start_run(run)
    for k in range(18):
        start = T0 + 600.0 * k
        span = (start, start + 600.0)
        rows = [
            EnergyInterval.of(host, device, kind, Source.COUNTER, *span, joules, joules, joules)
            for host in ("n0", "n1")
            for device, kind, joules in (("gpu0", Kind.GPU, 60_000.0 + k), ("cpu", Kind.CPU, 9_000.0))
        ]
        node = EnergyInterval.of("n1", "bmc", Kind.NODE, Source.COUNTER, *span, 1e5, 9e4, 1.1e5)
        ledger.record_intervals(run, [*rows, node])


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL the engine runs inside the block."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def hours_of(ledger: Ledger) -> list[tuple[int | None, str, float, float, float]]:
    return [(h.hour, h.kind, h.energy_j, h.low_j, h.high_j) for h in ledger.energy_by_hour("r")]


def spans_of(ledger: Ledger) -> tuple[object, ...]:
    """The run's span, its devices', gpu0's joules and seconds (every host's) and its GPU-seconds
    and GPUs: from the device totals since 0017."""
    with ledger.reading("r") as read:
        return read.span(), read.device_spans(), read.device_power(["gpu0"]), read.device_seconds("gpu")


def test_a_runs_hours_are_read_from_the_rollup_and_add_up_to_its_rows(ledger_url: str) -> None:
    ledger = Ledger(make_engine(ledger_url))
    fill(ledger)
    with ledger.reading("r") as read, statements(ledger.engine) as seen:
        by_hour = read.energy_j_by_hour()
        node_hosts = read.energy_j_by_hour(["node"]), read.energy_j_by_hour(["gpu", "cpu"], ["n1"])
        hours = read.energy_by_hour(["gpu"])
    assert seen and not [s for s in seen if "energy_record" in s], seen  # on 0015: every row read
    first = int(T0 // 3_600)
    gpu_j = [sum(60_000.0 + k for k in range(6 * h, 6 * h + 6)) for h in range(3)]
    assert by_hour == {first + h: 2 * gpu_j[h] + 6 * (2 * 9_000.0 + 1e5) for h in range(3)}
    metered, components = node_hosts
    assert metered == {first + h: 6e5 for h in range(3)}
    assert components == {first + h: gpu_j[h] + 54_000.0 for h in range(3)}
    assert [(h.hour, h.energy_j) for h in hours] == [(first + h, 2 * gpu_j[h]) for h in range(3)]
    energy = ledger_energy(ledger, "r")
    counted = {3_600 * hour: node_hosts[0][hour] + node_hosts[1][hour] for hour in by_hour}  # n1: its meter
    assert energy is not None and energy.by_hour_j == counted
    ledger.engine.dispose()


def test_compaction_and_a_rebuild_leave_the_hours_as_they_were(ledger_url: str) -> None:
    ledger = Ledger(make_engine(ledger_url))
    fill(ledger)
    before, spans = hours_of(ledger), spans_of(ledger)
    gpu0_j = 2 * sum(60_000.0 + k for k in range(18))
    whole = (T0, T0 + 3 * 3_600.0)
    assert spans == (whole, dict.fromkeys(DEVICES, whole), {"gpu0": (gpu0_j, 21_600.0)}, (21_600.0, 1))
    compaction = ledger.compact_hourly(0, now_s=T0 + 10 * 3_600.0)
    assert compaction.raw_rows == 90
    assert hours_of(ledger) == before and spans_of(ledger) == spans
    assert rollup_drift(ledger) == {}  # `wattlog check` finds the folded rows agree with the rollups
    with ledger.engine.begin() as connection:
        connection.execute(HOURS.delete())
        connection.execute(text("UPDATE energy_total SET first_start_s = NULL, last_end_s = NULL"))
        connection.execute(text("UPDATE energy_total SET seconds = 0"))
    assert hours_of(ledger) == [] and spans_of(ledger) == (None, {}, {"gpu0": (gpu0_j, 0.0)}, (0.0, 1))
    ledger.rebuild_totals("r")
    assert hours_of(ledger) == before and spans_of(ledger) == spans
    ledger.engine.dispose()


def test_a_ledger_from_before_the_rollups_of_hours_and_spans_gets_them_from_its_rows(ledger_url: str) -> None:
    ledger = Ledger(make_engine(ledger_url))
    fill(ledger)
    before, spans = hours_of(ledger), spans_of(ledger)
    ledger.engine.dispose()
    engine = make_engine(ledger_url, migrate=False)
    downgrade(engine, "0015")
    engine.dispose()
    ledger = Ledger(make_engine(ledger_url))  # upgraded to head: 0016 sums the rows, 0017 spans them
    assert hours_of(ledger) == before and spans_of(ledger) == spans
    ledger.record_intervals(
        "r", [EnergyInterval.of("n0", "gpu0", Kind.GPU, Source.COUNTER, *LATE, 5.0, 5.0, 5.0)]
    )
    later_span, later, *_ = spans_of(ledger)
    assert (
        later_span == (T0, LATE[1])
        and later[("n0", "gpu0")] == (T0, LATE[1])
        and later[("n1", "gpu0")] == spans[1][("n1", "gpu0")]
    )
    ledger.engine.dispose()


def test_deleting_a_run_deletes_its_hours_and_an_impossible_hour_is_refused(ledger_url: str) -> None:
    ledger = Ledger(make_engine(ledger_url))
    fill(ledger)
    fill(ledger, "other")
    delete_run(ledger, "other")
    with ledger.engine.connect() as connection:
        runs = connection.execute(text("SELECT DISTINCT run_id FROM energy_hour")).scalars().all()
    assert len(runs) == 1
    check_ledger(ledger, "l.db")
    bad = {"run_id": runs[0], "hour": 1, "host": "n9", "kind": "gpu", "source": "counter"}
    with ledger.engine.begin() as connection:
        connection.execute(insert(HOURS), [{**bad, "energy_j": -5.0, "low_j": -6.0, "high_j": -4.0}])
    with pytest.raises(LedgerError, match="1 hourly energy sums with energy negative.*n9: -5.0 J"):
        check_ledger(ledger, "l.db")
    ledger.engine.dispose()


def test_checking_a_runs_hours_reads_only_the_index_of_impossible_ones(ledger_url: str) -> None:
    assert IMPOSSIBLE_ENERGY_SQL.replace(" OR end_s < start_s", "") == IMPOSSIBLE_SUMS_SQL  # one rule
    engine = make_engine(ledger_url)
    query = f"SELECT count(*) FROM energy_hour WHERE run_id IN (1) AND ({IMPOSSIBLE_SUMS_SQL})"
    with engine.connect() as connection:
        plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {query}").fetchall()
    assert "ix_energy_hour_impossible" in " ".join(str(row) for row in plan)
    engine.dispose()
