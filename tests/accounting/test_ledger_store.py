"""Ledger behaviour on a real database (SQLite here; tests/integration reruns these on PostgreSQL)."""

from __future__ import annotations

import dataclasses
import math
import os

import pytest
from sqlalchemy import event, func, select
from sqlalchemy.orm import Session

from wattlog.accounting.ledger import Ledger, Role, RunSpec, Status, make_engine
from wattlog.accounting.ledger.models import EnergyRecord, GapRecord, Run
from wattlog.accounting.ledger.views import EnergyTotal, EventInfo, GapInfo, RunInfo
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError, LedgerError, RunNotFound
from wattlog.events import EventCategory, EventKind
from wattlog.records import EnergyInterval, Gap, Kind, Source

T0 = 1_700_000_000.0  # FakeClock's wall time at monotonic 0


@pytest.fixture
def ledger_url(tmp_path) -> str:
    """A fresh SQLite file per test."""
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def ledger(ledger_url: str, fake_clock: FakeClock) -> Ledger:
    """A migrated, empty ledger on a fake clock."""
    return Ledger(make_engine(ledger_url), clock=fake_clock)


def interval(
    device: str,
    start_s: float,
    energy_j: float,
    *,
    kind: Kind = Kind.GPU,
    length_s: float = 10.0,
    source: Source = Source.COUNTER,
) -> EnergyInterval:
    """One flush row with a +-5 % band."""
    return EnergyInterval.of(
        "node0", device, kind, source, start_s, start_s + length_s, energy_j, energy_j * 0.95, energy_j * 1.05
    )


def count(ledger: Ledger, table: type) -> int:
    with Session(ledger.engine) as session:
        return session.execute(select(func.count()).select_from(table)).scalar_one()


def test_start_run_creates_project_and_returns_the_row(ledger: Ledger) -> None:
    run = ledger.start_run(
        "olmo-7b",
        RunSpec(project="olmo", role="ablation", model="OLMo 7B", site="jupiter", config={"lr": 3e-4}),
    )
    again = ledger.get_run("olmo-7b")
    assert again.id == run.id and ledger.get_run(run.id).name == "olmo-7b"
    assert (again.role, again.status, again.config, again.start_s) == (
        "ablation",
        "running",
        {"lr": 3e-4},
        T0,
    )
    assert ledger.project_of(again) == "olmo"


def test_restart_continues_the_same_run_id_and_records_a_restart(
    ledger: Ledger, fake_clock: FakeClock
) -> None:
    first = ledger.start_run("r", RunSpec(project="p"))
    ledger.end_run("r", Status.KILLED)
    fake_clock.advance(60)
    resumed = ledger.start_run("r", RunSpec(project="p"), resume=True)
    assert resumed.id == first.id and resumed.status == "running" and resumed.restarts == 1
    assert [(e.kind, e.time_s) for e in ledger.events("r")] == [("restart", T0 + 60)]
    assert len(ledger.runs("p")) == 1


def test_duplicate_name_without_resume_is_refused(ledger: Ledger) -> None:
    ledger.start_run("r")
    with pytest.raises(LedgerError, match="already exists.*--resume"):
        ledger.start_run("r")


def test_missing_run_is_one_clear_error(ledger: Ledger) -> None:
    with pytest.raises(LedgerError, match="run 'nope' does not exist"):
        ledger.get_run("nope")
    with pytest.raises(LedgerError, match="run '42' does not exist"):
        ledger.record_intervals(42, [interval("gpu0", T0, 1.0)])
    assert count(ledger, EnergyRecord) == 0


def test_bad_role_and_status_name_the_allowed_values(ledger: Ledger) -> None:
    with pytest.raises(ConfigError, match="final|ablation"):
        ledger.start_run("r", RunSpec(role="production"))
    ledger.start_run("r")
    with pytest.raises(ConfigError, match="unknown status"):
        ledger.end_run("r", "done")


def test_end_run_sets_status_and_end_time(ledger: Ledger, fake_clock: FakeClock) -> None:
    ledger.start_run("r")
    fake_clock.advance(3600)
    run = ledger.end_run("r")
    assert (run.status, run.end_s) == ("finished", T0 + 3600)


def test_totals_sum_devices_never_average_them(ledger: Ledger) -> None:
    run = ledger.start_run("r")
    # 100 W and 200 W for an hour, flushed every 10 s: 0.1 + 0.2 kWh = 1.08 MJ
    for i in range(360):
        ledger.record_intervals(
            run.id, [interval("gpu0", T0 + 10 * i, 1000.0), interval("gpu1", T0 + 10 * i, 2000.0)]
        )
    totals = {t.device: t for t in ledger.energy_totals(run.id)}
    assert totals["gpu0"].energy_j == pytest.approx(360_000.0)
    assert totals["gpu1"].energy_j == pytest.approx(720_000.0)
    assert sum(t.energy_j for t in totals.values()) == pytest.approx(1_080_000.0)
    assert totals["gpu1"].low_j == pytest.approx(0.95 * 720_000) and totals["gpu1"].source == "counter"


def test_a_failure_mid_batch_writes_nothing(ledger: Ledger) -> None:
    run = ledger.start_run("r")

    def fail_on_gaps(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
        if statement.lstrip().upper().startswith("INSERT INTO GAP"):
            raise RuntimeError("disk full")

    event.listen(ledger.engine, "before_cursor_execute", fail_on_gaps)
    try:
        with pytest.raises(RuntimeError, match="disk full"):
            ledger.record_intervals(
                run.id,
                [interval("gpu0", T0, 5.0), interval("gpu1", T0, 6.0)],
                [Gap("node0", "gpu2", T0, T0 + 10, "lost")],
            )
    finally:
        event.remove(ledger.engine, "before_cursor_execute", fail_on_gaps)
    assert count(ledger, EnergyRecord) == 0 and count(ledger, GapRecord) == 0
    assert ledger.energy_totals(run.id) == []
    ledger.record_intervals(run.id, [interval("gpu0", T0, 5.0)], [Gap("node0", "gpu2", T0, T0 + 10, "lost")])
    assert count(ledger, EnergyRecord) == 1 and count(ledger, GapRecord) == 1


@pytest.mark.parametrize(
    ("energy_j", "low_j", "high_j", "end_offset_s", "match"),
    [
        (-1.0, -1.0, -1.0, 10.0, "0 <= low"),
        (math.nan, 0.0, 1.0, 10.0, "not finite"),
        (5.0, 6.0, 7.0, 10.0, "low <= energy"),
        (5.0, 4.0, 6.0, -1.0, "ends before it starts"),
    ],
)
def test_inconsistent_rows_are_refused_whole(
    ledger: Ledger, energy_j: float, low_j: float, high_j: float, end_offset_s: float, match: str
) -> None:
    run = ledger.start_run("r")
    bad = EnergyInterval.of(
        "node0", "gpu1", Kind.GPU, Source.SAMPLED, T0, T0 + end_offset_s, energy_j, low_j, high_j
    )
    with pytest.raises(ConfigError, match=match):
        ledger.record_intervals(run.id, [interval("gpu0", T0, 1.0), bad])
    assert count(ledger, EnergyRecord) == 0


def test_gaps_are_stored_not_filled(ledger: Ledger) -> None:
    run = ledger.start_run("r")
    ledger.record_intervals(run.id, [], [Gap("node0", "gpu0", T0 + 5, T0 + 35, "device lost")])
    [gap] = ledger.gaps(run.id)
    assert (gap.device, gap.end_s - gap.start_s, gap.reason) == ("gpu0", 30.0, "device lost")
    assert ledger.energy_totals(run.id) == []


def test_events_keep_step_category_and_payload(ledger: Ledger) -> None:
    ledger.start_run("r")
    ledger.record_event("r", "loss_spike", time_s=T0 + 5, step=120, category="wasted", payload={"loss": 9.5})
    ledger.record_event("r", "health_check", time_s=T0 + 1, payload={"ok": True})
    assert [(e.kind, e.step, e.category, e.payload) for e in ledger.events("r")] == [
        ("health_check", None, "", {"ok": True}),
        ("loss_spike", 120, "wasted", {"loss": 9.5}),
    ]


def test_runs_by_project(ledger: Ledger, fake_clock: FakeClock) -> None:
    ledger.start_run("final", RunSpec(project="opt", role=Role.FINAL))
    fake_clock.advance(1)
    ledger.start_run("abl", RunSpec(project="opt", role=Role.ABLATION))
    ledger.start_run("other", RunSpec(project="x"))
    assert [r.name for r in ledger.runs("opt")] == ["final", "abl"]
    assert len(ledger.runs()) == 3
    with pytest.raises(LedgerError, match="project 'nope' does not exist"):
        ledger.runs("nope")


def test_compaction_keeps_totals_and_hours_exactly(ledger: Ledger) -> None:
    run = ledger.start_run("r")
    start = 3600.0 * 500_000 + 1234.5  # mid-hour, so rows straddle hour boundaries
    rows = [
        interval(f"gpu{d}", start + 10 * i, 100.0 + 0.37 * i + d, source=Source.SAMPLED)
        for i in range(1500)
        for d in range(2)
    ]
    rows += [
        interval("cpu", start + 10 * i, 55.5, kind=Kind.CPU, source=Source.ESTIMATED) for i in range(1500)
    ]
    for i in range(0, len(rows), 300):
        ledger.record_intervals(run.id, rows[i : i + 300])
    totals_before = {(t.device, t.source): t for t in ledger.energy_totals(run.id)}
    hours_before = ledger.energy_by_hour(run.id)
    now_s = start + 10 * 1500
    result = ledger.compact_hourly(older_than_s=0, now_s=now_s)
    assert result.raw_rows > 0 and result.hourly_rows < result.raw_rows
    totals_after = {(t.device, t.source): t for t in ledger.energy_totals(run.id)}
    assert totals_after.keys() == totals_before.keys()
    for key, before in totals_before.items():
        after = totals_after[key]
        assert after.energy_j == pytest.approx(before.energy_j, rel=1e-12)
        assert (after.low_j, after.high_j) == pytest.approx((before.low_j, before.high_j), rel=1e-12)
    assert [(h.hour, h.kind, h.source) for h in ledger.energy_by_hour(run.id)] == [
        (h.hour, h.kind, h.source) for h in hours_before
    ]
    for a, b in zip(ledger.energy_by_hour(run.id), hours_before, strict=True):
        assert a.energy_j == pytest.approx(b.energy_j, rel=1e-12)
    # the current hour is never folded, and a second compaction changes nothing
    with Session(ledger.engine) as session:
        raw_hours = set(
            session.execute(select(EnergyRecord.hour).where(EnergyRecord.resolution == "raw")).scalars()
        )
    assert raw_hours == {int(now_s // 3600)}
    assert ledger.compact_hourly(older_than_s=0, now_s=now_s).raw_rows == 0


def test_compaction_respects_older_than(ledger: Ledger) -> None:
    run = ledger.start_run("r")
    ledger.record_intervals(run.id, [interval("gpu0", 7200.0 * 1000 + 10 * i, 1.0) for i in range(10)])
    assert ledger.compact_hourly(older_than_s=86_400, now_s=7200.0 * 1000 + 3600).raw_rows == 0
    assert ledger.compact_hourly(older_than_s=0, now_s=7200.0 * 1000 + 3600).hourly_rows == 1


def test_runs_table_has_the_migrated_columns(ledger: Ledger) -> None:
    with Session(ledger.engine) as session:
        assert session.execute(select(func.count()).select_from(Run)).scalar_one() == 0


def test_energy_by_hour_filters_kinds_and_hosts(ledger: Ledger) -> None:
    run = ledger.start_run("r")
    other = EnergyInterval.of("node1", "meter", Kind.NODE, Source.SAMPLED, 3600.0, 3610.0, 9.0, 9.0, 9.0)
    ledger.record_intervals(
        run.id,
        [
            interval("gpu0", 3600.0, 1.0),
            interval("cpu", 3600.0, 2.0, kind=Kind.CPU),
            interval("gpu0", 7200.0, 4.0),
            other,
        ],
    )
    assert [(h.hour, h.kind, h.energy_j) for h in ledger.energy_by_hour(run.id, kinds=["gpu"])] == [
        (1, "gpu", 1.0),
        (2, "gpu", 4.0),
    ]
    assert [h.kind for h in ledger.energy_by_hour(run.id, exclude_hosts=["node0"])] == ["node"]


def test_rollup_matches_the_records_and_survives_rebuild(ledger: Ledger) -> None:
    run = ledger.start_run("r")
    other = ledger.start_run("other")
    for i in range(50):
        ledger.record_intervals(
            run.id,
            [
                interval("gpu0", 3600.0 * 1000 + 10 * i, 1.5 + i),
                interval("gpu0", 3600.0 * 1000 + 10 * i + 5, 0.5),
            ],
        )  # same rollup key twice in one write (two intervals of one device)
        ledger.record_intervals(other.id, [interval("gpu9", 3600.0 * 1000 + 10 * i, 7.0)])
    with Session(ledger.engine) as session:
        truth = session.execute(
            select(func.sum(EnergyRecord.energy_j)).where(EnergyRecord.run_id == run.id)
        ).scalar()
    [total] = ledger.energy_totals(run.id)
    assert total.energy_j == pytest.approx(truth) and total.rows == 100
    ledger.compact_hourly(0, now_s=3600.0 * 1010)
    assert ledger.energy_totals(run.id) == [total]
    assert ledger.rebuild_totals(run.id) == 1
    [rebuilt] = ledger.energy_totals(run.id)
    assert rebuilt.energy_j == pytest.approx(truth) and rebuilt.rows == 1  # one hourly row now
    assert ledger.energy_totals(other.id)[0].energy_j == pytest.approx(350.0)


def test_reads_return_frozen_read_models_with_ids(ledger: Ledger) -> None:
    run = ledger.start_run("frozen", RunSpec(config={"lr": 1e-3}))
    ledger.record_event("frozen", EventKind.CHECKPOINT, step=5, category=EventCategory.PRODUCTIVE)
    gaps = [Gap("node0", "GPU-0", T0, T0 + 1, "lost")]
    ledger.record_intervals("frozen", [interval("GPU-0", T0, 10.0)], gaps)
    (event,) = ledger.events("frozen")
    (gap,) = ledger.gaps("frozen")
    (row,) = ledger.energy_rows("frozen")
    assert isinstance(run, RunInfo) and isinstance(event, EventInfo) and isinstance(gap, GapInfo)
    assert isinstance(run.id, int) and run.status is Status.RUNNING
    assert event.kind is EventKind.CHECKPOINT and event.category is EventCategory.PRODUCTIVE
    assert (row.energy_j, row.device, gap.duration_s) == (10.0, "GPU-0", 1.0)
    for model, field in ((run, "status"), (event, "kind"), (gap, "reason"), (row, "energy_j")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(model, field, "changed")
    with pytest.raises(TypeError):
        run.config["lr"] = 1.0  # type: ignore[index]
    assert ledger.end_run("frozen", Status.PREEMPTED).status is Status.PREEMPTED


def test_a_missing_run_is_a_typed_run_not_found(ledger: Ledger) -> None:
    with pytest.raises(RunNotFound) as missing:
        ledger.events("ghost")
    assert isinstance(missing.value, LedgerError) and isinstance(missing.value, LookupError)
    assert missing.value.run == "ghost"
    assert ledger.find_run("ghost") is None and ledger.find_run(ledger.start_run("here").id) is not None


def refigured(row: EnergyInterval, **changes: float) -> EnergyInterval:
    """`row` with its figure's fields changed."""
    return dataclasses.replace(row, figure=dataclasses.replace(row.figure, **changes))


def test_a_runs_band_adds_its_rows_sampling_error_in_quadrature(ledger: Ledger) -> None:
    run = ledger.start_run("r")
    hour_s = 3600.0 * 500_000
    # an hour of 10 s rows of 100 J: calibration -5/+5 J (adds up), sampling error 10 J a side (does not)
    rows = [
        refigured(
            interval("gpu0", hour_s + 10 * i, 100.0),
            low_j=85.0,
            high_j=115.0,
            random_low_j=10.0,
            random_high_j=10.0,
        )
        for i in range(360)
    ]
    for i in range(0, 360, 60):
        ledger.record_intervals(run.id, rows[i : i + 60])
    expected = (
        pytest.approx(360 * 95.0 - 10 * math.sqrt(360)),
        pytest.approx(360 * 105.0 + 10 * math.sqrt(360)),
    )
    [total] = ledger.energy_totals(run.id)
    [hour] = ledger.energy_by_hour(run.id)
    assert total.energy_j == hour.energy_j == pytest.approx(36_000.0)
    assert (total.low_j, total.high_j) == expected  # not the linear 30,600-41,400 J
    assert (hour.low_j, hour.high_j) == expected
    # folded into an hourly row, and the rollup rebuilt from it: the same band
    assert ledger.compact_hourly(older_than_s=0, now_s=hour_s + 7200).hourly_rows == 1
    assert ledger.rebuild_totals(run.id) == 1
    [total] = ledger.energy_totals(run.id)
    [hour] = ledger.energy_by_hour(run.id)
    assert (total.low_j, total.high_j) == expected and (hour.low_j, hour.high_j) == expected


@pytest.mark.parametrize(
    "parts",
    [{"random_low_j": 6.0}, {"random_high_j": 6.0}, {"random_low_j": -1.0}, {"random_high_j": math.nan}],
)
def test_a_sampling_error_part_outside_its_side_of_the_band_is_refused_whole(ledger: Ledger, parts) -> None:
    run = ledger.start_run("r")
    bad = refigured(interval("gpu0", 3600.0, 100.0), **parts)  # the band is 95-105 J
    with pytest.raises(ConfigError, match="band parts of gpu0"):
        ledger.record_intervals(run.id, [interval("gpu1", 3600.0, 1.0), bad])
    assert count(ledger, EnergyRecord) == 0 and ledger.energy_totals(run.id) == []


def uneven_rows(hour_s: float) -> list[EnergyInterval]:
    """Two hours of 60 s rows whose band sides and sampling-error parts differ by row and by side."""
    rows = []
    for i in range(120):
        energy, random_low, random_high = 100.0 + i % 7, 1.0 + i % 4, 5.0 + 2 * (i % 3)
        low, high = energy - (3.0 + i % 5) - random_low, energy + (2.0 + i % 3) + random_high
        rows.append(
            EnergyInterval.of(
                "node0", "gpu0", Kind.GPU, Source.COUNTER, hour_s + 60 * i, hour_s + 60 * i + 60,
                energy, low, high, random_low, random_high,
            )
        )  # fmt: skip
    return rows


def band_by_hand(rows: list[EnergyInterval]) -> tuple[float, float, float, float]:
    """(low, high, random low, random high) of the rows' sum.

    The systematic parts of each side add up; the sampling errors add in quadrature.
    """
    energy = sum(r.energy_j for r in rows)
    random_low = math.sqrt(sum(r.random_low_j**2 for r in rows))
    random_high = math.sqrt(sum(r.random_high_j**2 for r in rows))
    below = sum(r.energy_j - r.low_j - r.random_low_j for r in rows)
    above = sum(r.high_j - r.energy_j - r.random_high_j for r in rows)
    return energy - below - random_low, energy + above + random_high, random_low, random_high


def test_every_summing_path_keeps_uneven_band_parts_apart(ledger: Ledger) -> None:
    """Totals, hours, compaction and rebuild on parts that differ by side and by row.

    Equal parts on both sides (or none) cannot tell low from high, nor a sum of
    squares from a square of sums: here a swapped or unsquared term moves the band.
    """
    run = ledger.start_run("r")
    hour_s = 3600.0 * 500_000
    rows = uneven_rows(hour_s)
    for i in range(0, len(rows), 7):  # several writes, several rows of one key in each
        ledger.record_intervals(run.id, rows[i : i + 7])
    whole, hours = band_by_hand(rows), [band_by_hand(rows[:60]), band_by_hand(rows[60:])]

    def figures(total: EnergyTotal) -> tuple[float, float, float, float]:
        f = total.figure
        return f.low_j, f.high_j, f.random_low_j, f.random_high_j

    def check() -> None:
        [total] = ledger.energy_totals(run.id)
        assert figures(total) == pytest.approx(whole, rel=1e-12)
        assert [figures(h) for h in ledger.energy_by_hour(run.id)] == [
            pytest.approx(hours[0], rel=1e-12),
            pytest.approx(hours[1], rel=1e-12),
        ]

    check()
    assert ledger.energy_rows(run.id) == rows  # each row reads back as written
    assert ledger.compact_hourly(older_than_s=0, now_s=hour_s + 3 * 3600).hourly_rows == 2
    check()
    folded = [(r.low_j, r.high_j, r.random_low_j, r.random_high_j) for r in ledger.energy_rows(run.id)]
    assert folded == [pytest.approx(hours[0], rel=1e-12), pytest.approx(hours[1], rel=1e-12)]
    assert ledger.rebuild_totals(run.id) == 1
    check()


def test_batched_compaction_keeps_totals_and_returns_the_space(ledger: Ledger) -> None:
    from wattlog.accounting.ledger.compaction import return_space

    run = ledger.start_run("r")
    start = 3600.0 * 500_000
    rows = [
        interval(f"gpu{d}", start + 30 * i, 100.0 + 0.37 * i + d, length_s=30.0)
        for i in range(6 * 120)
        for d in range(2)
    ]
    ledger.record_intervals(run.id, rows)
    before = {t.device: t.energy_j for t in ledger.energy_totals(run.id)}
    hours_before = {h.hour: h.energy_j for h in ledger.energy_by_hour(run.id)}
    begins: list[object] = []

    def begun(connection: object) -> None:
        begins.append(connection)

    event.listen(ledger.engine, "begin", begun)
    done = ledger.compact_hourly(older_than_s=0, now_s=start + 6 * 3600, batch_rows=2 * 2 * 120)
    event.remove(ledger.engine, "begin", begun)
    assert (done.raw_rows, done.hourly_rows) == (6 * 2 * 120, 6 * 2)
    assert len(begins) == 1 + 3  # the hours listed, then 2 hours (480 rows) per transaction
    assert {t.device: t.energy_j for t in ledger.energy_totals(run.id)} == pytest.approx(before, rel=1e-12)
    assert {h.hour: h.energy_j for h in ledger.energy_by_hour(run.id)} == pytest.approx(hours_before)
    path = ledger.engine.url.database if ledger.engine.dialect.name == "sqlite" else None

    def size() -> int:  # the file and its write-ahead log
        assert path is not None
        return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))

    size_before = size() if path else 0
    return_space(ledger.engine)
    if path:  # the file shrinks: a compacted day no longer keeps its raw rows' pages
        assert size() < size_before / 2
    assert {t.device: t.energy_j for t in ledger.energy_totals(run.id)} == pytest.approx(before, rel=1e-12)


def test_device_spans_equal_every_rows_first_start_and_last_end(ledger: Ledger) -> None:
    run = ledger.start_run("spans")

    def row(device: str, start_s: float, end_s: float) -> EnergyInterval:
        return EnergyInterval.of("n0", device, Kind.GPU, Source.COUNTER, start_s, end_s, 1.0, 1.0, 1.0)

    rows = [row("gpu0", 3600.0 * h + 5, 3600.0 * h + 15) for h in range(6)]  # the run's whole span
    rows += [row("late", 7300.0, 7310.0), row("late", 20000.0, 20010.0)]  # starts after the first hour
    rows += [row("early", 100.0, 110.0), row("early", 10000.0, 10010.0)]  # stops before the last hour
    rows += [row("middle", 9000.0, 9010.0)]  # in neither the first nor the last hour
    rows += [row("long", 200.0, 21600.0), row("long", 18100.0, 18110.0)]  # its last end is an old row's
    ledger.record_intervals(run.id, rows)
    with ledger.reading(run.id) as read:
        spans = read.device_spans()
    expected: dict[tuple[str, str], tuple[float, float]] = {}
    for r in rows:
        start_s, end_s = expected.get((r.host, r.device), (r.start_s, r.end_s))
        expected[(r.host, r.device)] = (min(start_s, r.start_s), max(end_s, r.end_s))
    assert spans == expected
    with ledger.reading(ledger.start_run("empty").id) as read:
        assert read.device_spans() == {}


def test_compaction_keeps_a_hole_between_rows_a_hole(ledger: Ledger) -> None:
    """Two stretches of one device in one hour, 20 minutes apart, fold into two rows, never one
    spanning the hole (it would read as measured time)."""
    hour_s = 3600.0 * 500_000  # an hour boundary
    run = ledger.start_run("holes").id
    rows = [interval("gpu0", hour_s + k * 10.0, 100.0) for k in range(60)]  # 0-10 min
    rows += [interval("gpu0", hour_s + 1800.0 + k * 10.0, 100.0) for k in range(60)]  # 30-40 min
    ledger.record_intervals(run, rows)
    ledger.compact_hourly(older_than_s=0, now_s=hour_s + 2 * 3600.0)
    folded = sorted((r.start_s - hour_s, r.end_s - hour_s) for r in ledger.energy_rows(run))
    assert folded == [(0.0, 600.0), (1800.0, 2400.0)]
