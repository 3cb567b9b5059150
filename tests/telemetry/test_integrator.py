"""The integrator: counters, resets, wraps, gaps, trapezoids, sums and flush intervals."""

from __future__ import annotations

import threading

import pytest

from wattlog.clock import FakeClock
from wattlog.records import Kind, Source
from wattlog.telemetry.integrator import _PENDING_MAX, Integrator
from wattlog.telemetry.types import DeviceInfo, Reading, mean_utilisation

PERIOD_S = 0.025


def device(uuid: str, *, counter: bool, range_mj: float | None = None, kind: Kind = Kind.GPU) -> DeviceInfo:
    source = Source.COUNTER if counter else Source.SAMPLED
    return DeviceInfo(uuid, uuid, kind, source, counter, counter_range_mj=range_mj, power_limit_w=700.0)


def feed(
    integ: Integrator,
    uuid: str,
    t0_s: float,
    t1_s: float,
    power_w: float,
    *,
    counter_mj: float | None = None,
) -> float | None:
    """Readings every period over [t0_s, t1_s) of constant power; returns the counter at the end."""
    k = 0
    while (t := t0_s + k * PERIOD_S) < t1_s - 1e-12:
        if counter_mj is not None:
            counter_mj += power_w * PERIOD_S * 1e3 if k else 0.0
        integ.add(Reading(uuid, t, energy_mj=counter_mj, power_w=power_w))
        k += 1
    return counter_mj


def by_uuid(integ: Integrator, uuid: str):  # noqa: ANN201 - a DeviceEnergy
    return next(e for e in integ.snapshot() if e.device.uuid == uuid)


def test_trapezoids_integrate_power_without_a_counter(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=False)], host="h", clock=fake_clock)
    feed(integ, "a", 0.0, 10.0, 200.0)
    e = by_uuid(integ, "a")
    assert e.energy_j == pytest.approx(200.0 * 9.975)
    assert e.samples == 400 and e.gap_count == 0 and e.power_w == 200.0
    assert e.low_j < e.energy_j < e.high_j


def test_counter_differences_give_the_energy_and_the_trapezoid_is_kept_beside(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=True)], host="h", clock=fake_clock)
    integ.add(Reading("a", 0.0, energy_mj=5_000_000.0, power_w=100.0))  # counter since driver load
    integ.add(Reading("a", 1.0 * PERIOD_S, energy_mj=5_000_000.0 + 3_000.0, power_w=140.0))
    e = by_uuid(integ, "a")
    assert e.energy_j == pytest.approx(3.0)  # the counter, not the 5 kJ before the agent started
    assert integ.sampled_energy_j("a") == pytest.approx(0.5 * (100 + 140) * PERIOD_S)
    assert any("counter vs sampled" in n for n in e.notes)


def test_a_counter_reset_is_counted_never_negative_and_recorded_as_a_gap(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=True)], host="h", clock=fake_clock)
    c = feed(integ, "a", 0.0, 1.0, 400.0, counter_mj=1_000_000.0)
    assert c is not None
    integ.add(Reading("a", 1.0, energy_mj=2_000.0, power_w=400.0))  # driver reload: restarts near 0
    feed(integ, "a", 1.0 + PERIOD_S, 2.0, 400.0, counter_mj=2_000.0 + 400.0 * PERIOD_S * 1e3)
    e = by_uuid(integ, "a")
    # 39 steps of 10 J before the reset, 2 J since it, then 39 steps of 10 J
    assert e.energy_j == pytest.approx(390.0 + 2.0 + 390.0)
    assert e.energy_j > 0
    assert e.gap_count == 1 and e.gap_s == pytest.approx(PERIOD_S)
    assert any("reset" in n for n in e.notes)
    _, gaps = integ.take_intervals()
    assert [g.reason for g in gaps] == ["counter: reset (energy before the reset unknown)"]


def test_a_counter_wrap_adds_the_range(fake_clock: FakeClock) -> None:
    integ = Integrator(
        [device("cpu", counter=True, range_mj=100_000.0, kind=Kind.CPU)], host="h", clock=fake_clock
    )
    integ.add(Reading("cpu", 0.0, energy_mj=99_000.0))
    integ.add(Reading("cpu", PERIOD_S, energy_mj=1_500.0))  # wrapped: 1 J to the top, 1.5 J after
    e = by_uuid(integ, "cpu")
    assert e.energy_j == pytest.approx(2.5)
    assert e.gap_count == 0 and any("wrapped 1x" in n for n in e.notes)


def test_a_backwards_step_inconsistent_with_a_wrap_is_a_reset(fake_clock: FakeClock) -> None:
    integ = Integrator(
        [device("cpu", counter=True, range_mj=100_000.0, kind=Kind.CPU)], host="h", clock=fake_clock
    )
    integ.add(Reading("cpu", 0.0, energy_mj=40_000.0))
    integ.add(Reading("cpu", PERIOD_S, energy_mj=3_000.0))  # a wrap would mean 63 J in 25 ms
    e = by_uuid(integ, "cpu")
    assert e.energy_j == pytest.approx(3.0)
    assert any("reset" in n for n in e.notes) and not any("wrapped" in n for n in e.notes)


def test_no_interpolation_across_a_gap_which_is_recorded_with_its_duration(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=False)], host="h", clock=fake_clock)
    feed(integ, "a", 0.0, 1.0, 300.0)
    integ.record_failure("a", 1.0, "SensorError: timeout", False)
    feed(integ, "a", 2.0, 3.0, 300.0)  # last reading before at 0.975 s, next at 2.0 s
    e = by_uuid(integ, "a")
    assert e.energy_j == pytest.approx(300.0 * 0.975 * 2)
    assert e.gap_count == 1 and e.gap_s == pytest.approx(1.025)
    assert e.high_j >= e.energy_j + 1.025 * 700.0  # the gap may have drawn up to the power limit
    _, gaps = integ.take_intervals()
    assert len(gaps) == 1
    assert gaps[0].duration_s == pytest.approx(1.025)
    assert gaps[0].reason == "read failed: SensorError: timeout"
    assert gaps[0].start_s == pytest.approx(fake_clock.wall() + 0.975)


def test_a_short_miss_is_bridged_by_the_trapezoid(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=False)], host="h", clock=fake_clock)
    integ.add(Reading("a", 0.0, power_w=100.0))
    integ.add(Reading("a", 3 * PERIOD_S, power_w=100.0))  # two reads missed: 3 periods <= 4
    e = by_uuid(integ, "a")
    assert e.energy_j == pytest.approx(100.0 * 3 * PERIOD_S) and e.gap_count == 0


def test_a_counter_measures_exactly_across_a_stretch_without_readings(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=True)], host="h", clock=fake_clock)
    integ.add(Reading("a", 0.0, energy_mj=0.0, power_w=500.0))
    integ.add(Reading("a", 30.0, energy_mj=9_000_000.0, power_w=500.0))  # 30 s blocked, 9 kJ counted
    e = by_uuid(integ, "a")
    assert e.energy_j == pytest.approx(9000.0)
    assert e.gap_count == 0 and any("bridged" in n for n in e.notes)
    assert integ.sampled_energy_j("a") == 0.0  # the trapezoid does not interpolate over it


def test_a_lost_device_is_one_open_gap_and_others_go_on() -> None:
    clock = FakeClock()
    integ = Integrator([device("a", counter=False), device("b", counter=False)], host="h", clock=clock)
    feed(integ, "a", 0.0, 1.0, 100.0)
    feed(integ, "b", 0.0, 1.0, 100.0)
    integ.record_failure("a", 1.0, "device a is lost: GPU_IS_LOST", True)
    integ.add(Reading("a", 1.5, power_w=100.0))  # nothing more is integrated for a lost device
    feed(integ, "b", 1.0, 3.0, 100.0)
    clock.advance(3.0)
    a, b = by_uuid(integ, "a"), by_uuid(integ, "b")
    assert a.lost and a.gap_s == pytest.approx(3.0 - 0.975) and a.energy_j == pytest.approx(97.5)
    assert not b.lost and b.energy_j == pytest.approx(100.0 * 2.975)
    assert a.power_w is None and b.power_w == 100.0  # a lost device has no latest power (issue 38)
    _, gaps = integ.take_intervals()
    assert [(g.device, round(g.duration_s, 3)) for g in gaps] == [("a", 2.025)]
    clock.advance(10.0)
    _, gaps = integ.take_intervals()  # the open gap goes on, one segment per flush
    assert [(g.device, round(g.duration_s, 3)) for g in gaps] == [("a", 10.0)]


def test_devices_are_summed_never_averaged(fake_clock: FakeClock) -> None:
    # carbontracker 2.4.7 averaged: 100 W + 200 W for an hour gave 0.15 kWh instead of 0.3 kWh
    integ = Integrator([device("a", counter=False), device("b", counter=False)], host="h", clock=fake_clock)
    feed(integ, "a", 0.0, 3600.0 + PERIOD_S, 100.0)
    feed(integ, "b", 0.0, 3600.0 + PERIOD_S, 200.0)
    assert integ.total_energy_j() / 3.6e6 == pytest.approx(0.3)


def test_take_intervals_sums_to_the_snapshot_total() -> None:
    clock = FakeClock(start_s=100.0, wall_offset_s=1_800_000_000.0)
    integ = Integrator([device("a", counter=True), device("b", counter=False)], host="node1", clock=clock)
    counter = 0.0
    intervals = []
    for flush in range(5):
        start = 100.0 + 10.0 * flush
        counter = feed(integ, "a", start, start + 10.0, 250.0 + flush, counter_mj=counter) or 0.0
        feed(integ, "b", start, start + 10.0, 80.0)
        clock.advance(10.0)
        rows, _ = integ.take_intervals()
        intervals.extend(rows)
        assert all(r.start_s == pytest.approx(1_800_000_000.0 + start) for r in rows)
        assert all(r.end_s == pytest.approx(1_800_000_000.0 + start + 10.0) for r in rows)
    for uuid in ("a", "b"):
        rows = [r for r in intervals if r.device == uuid]
        assert sum(r.energy_j for r in rows) == pytest.approx(by_uuid(integ, uuid).energy_j)
        assert all(r.low_j <= r.energy_j <= r.high_j and r.host == "node1" for r in rows)
    assert {r.source for r in intervals} == {Source.COUNTER, Source.SAMPLED}


def test_rows_are_whole_millijoules_that_add_up_to_the_snapshot_exactly() -> None:
    """Each row is the difference of the running total rounded to the mJ at its two edges, so a
    device's rows add up to the snapshot's energy to the millijoule, however many rows: what
    "all recorded" compares (to 1e-9) and what an audit bundle stores in a few bytes a row."""
    clock = FakeClock(start_s=100.0, wall_offset_s=1_800_000_000.0)
    integ = Integrator([device("a", counter=True), device("b", counter=False)], host="node1", clock=clock)
    counter, rows = 0.0, []
    for flush in range(40):
        start = 100.0 + 0.9 * flush
        watts = 251.123456789 + 7.3 * (flush % 3)
        counter = feed(integ, "a", start, start + 0.9, watts, counter_mj=counter) or 0.0
        feed(integ, "b", start, start + 0.9, watts / 3)
        clock.advance(0.9)
        rows.extend(integ.take_intervals()[0])
    for uuid in ("a", "b"):
        mine = [r for r in rows if r.device == uuid]
        terms = [(r.energy_j, r.low_j, r.high_j, r.random_low_j, r.random_high_j) for r in mine]
        assert all(round(t * 1000) / 1000 == t for row in terms for t in row)
        assert sum(round(r.energy_j * 1000) for r in mine) == round(by_uuid(integ, uuid).energy_j * 1000)
        assert all(r.low_j <= r.energy_j <= r.high_j for r in mine)


def test_a_failure_before_the_first_reading_is_a_gap(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=False)], host="h", clock=fake_clock)
    integ.record_failure("a", 0.0, "SensorError: busy", False)
    integ.add(Reading("a", 2.0, power_w=100.0))
    e = by_uuid(integ, "a")
    assert e.gap_count == 1 and e.gap_s == pytest.approx(2.0)


def test_readings_of_unknown_devices_are_ignored(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=False)], host="h", clock=fake_clock)
    integ.add(Reading("zzz", 0.0, power_w=100.0))
    assert [e.device.uuid for e in integ.snapshot()] == ["a"]


def test_a_reading_without_power_neither_breaks_the_trapezoid_nor_makes_a_gap(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=False)], host="h", clock=fake_clock)
    integ.add(Reading("a", 0.0, power_w=100.0))
    integ.add(Reading("a", PERIOD_S, temperature_c=50.0))  # power not supported on this read
    integ.add(Reading("a", 2 * PERIOD_S, power_w=100.0))
    e = by_uuid(integ, "a")
    assert e.energy_j == pytest.approx(100.0 * 2 * PERIOD_S) and e.gap_count == 0 and e.samples == 3


def test_driver_timed_power_is_held_over_its_publication_and_a_stall_is_a_gap(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=False), device("e", counter=False)], host="h", clock=fake_clock)
    t = 0.0
    for k in range(40):  # reads every 25 ms; a new publication every 100 ms (then a 1 s stall)
        t = 0.025 * k + (1.0 if k >= 20 else 0.0)
        published_s = 0.1 * (int(round(t / 0.025)) // 4)
        integ.add(Reading("a", t, power_w=100.0 + published_s, power_t_s=published_s))
        integ.add(Reading("e", t, power_w=50.0, power_t_s=float(int(t))))  # the estimate: 1 s "publications"
    a, e = by_uuid(integ, "a"), by_uuid(integ, "e")
    assert a.gap_count == 1 and a.gap_s == pytest.approx(1.1)  # the stall, not the 100 ms publications
    assert any("30 of 40 reads repeated a publication" in n for n in a.notes)
    assert e.gap_count == 0  # 1 s between its publications is its own period, not a gap
    # each published value covers the 100 ms before it: publications 1-4, then 16-19 after the gap
    held_j = sum((100.0 + 0.1 * j) * 0.1 for j in [*range(1, 5), *range(16, 20)])
    assert a.energy_j == pytest.approx(held_j, rel=1e-9)


def test_readings_wait_in_a_bounded_queue_and_every_figure_integrates_them(fake_clock: FakeClock) -> None:
    integ = Integrator([device("a", counter=False)], host="h", clock=fake_clock)
    for k in range(_PENDING_MAX - 1):
        integ.add(Reading("a", k * PERIOD_S, power_w=100.0))
    assert integ.integration_cpu_s == 0.0  # queued: the sampler's wake pays no integration
    integ.add(Reading("a", (_PENDING_MAX - 1) * PERIOD_S, power_w=100.0))
    assert integ.integration_cpu_s > 0.0  # the queue is bounded: full, it is integrated at once
    integ.add(Reading("a", _PENDING_MAX * PERIOD_S, power_w=100.0))
    integ.record_failure("a", (_PENDING_MAX + 1) * PERIOD_S, "device a is lost: GPU_IS_LOST", True)
    integ.add(Reading("a", (_PENDING_MAX + 2) * PERIOD_S, power_w=100.0))  # after the loss: ignored
    e = by_uuid(integ, "a")  # a read integrates what is queued, in order
    assert e.samples == _PENDING_MAX + 1 and e.lost
    assert e.energy_j == pytest.approx(100.0 * _PENDING_MAX * PERIOD_S)


def test_readings_added_while_another_thread_reads_the_figures_are_all_integrated_in_order() -> None:
    clock = FakeClock()
    integ = Integrator([device("a", counter=True)], host="h", clock=clock)
    n = 20_000
    done = threading.Event()

    def sample() -> None:  # the sampler thread: readings in time order, a counter at 100 W
        for k in range(n):
            integ.add(Reading("a", k * PERIOD_S, energy_mj=k * 100.0 * PERIOD_S * 1e3, power_w=100.0))
        done.set()

    sampler = threading.Thread(target=sample)
    sampler.start()
    reads = 0
    while not done.is_set():  # a scraper reading the figures meanwhile, as the agent's are read
        integ.snapshot()
        reads += 1
    sampler.join()
    e = by_uuid(integ, "a")
    assert reads > 0 and e.samples == n and e.gap_count == 0
    assert e.energy_j == pytest.approx(100.0 * (n - 1) * PERIOD_S, rel=1e-12)  # no reading lost


def test_utilisation_readings_are_summed_so_two_snapshots_give_the_mean_between(
    fake_clock: FakeClock,
) -> None:
    integ = Integrator(
        [device("g", counter=False), device("c", counter=False, kind=Kind.CPU)], host="h", clock=fake_clock
    )
    integ.add(Reading("g", 0.0, power_w=100.0, utilisation_pct=10.0))
    integ.add(Reading("c", 0.0, power_w=50.0, utilisation_pct=100.0))
    before = integ.snapshot()
    for k, pct in enumerate((90.0, 70.0, 150.0), start=1):  # 150 % is no utilisation: skipped
        integ.add(Reading("g", k * PERIOD_S, power_w=100.0, utilisation_pct=pct))
    integ.add(Reading("g", 4 * PERIOD_S, power_w=100.0))  # a fast read without the slow metric
    after = integ.snapshot()
    assert by_uuid(integ, "g").utilisation_reads == 3 and by_uuid(integ, "g").utilisation_pct_sum == 170.0
    assert mean_utilisation(before, after, Kind.GPU) == pytest.approx(0.8)
    assert mean_utilisation(before, after, Kind.CPU) is None  # no CPU reading between the two


def test_the_first_interval_of_a_counter_device_is_its_start_up_check() -> None:
    clock = FakeClock()
    integ = Integrator([device("a", counter=True), device("s", counter=False)], host="h", clock=clock)
    end = feed(integ, "a", 0.0, 2.0, 300.0, counter_mj=1_000_000.0)
    feed(integ, "s", 0.0, 2.0, 100.0)
    clock.advance(2.0)
    integ.take_intervals()
    checks = {d.device.uuid: d.counter_check for d in integ.snapshot()}
    assert checks["s"] is None  # no counter: nothing to check
    assert checks["a"] is not None
    counter_j, power_j, span_s = checks["a"]
    assert counter_j == pytest.approx(power_j, rel=0.02) and span_s == pytest.approx(2.0, abs=0.05)
    feed(integ, "a", 2.0, 3.0, 600.0, counter_mj=end)  # later intervals leave the start-up check as it was
    clock.advance(1.0)
    integ.take_intervals()
    assert {d.device.uuid: d.counter_check for d in integ.snapshot()}["a"] == (counter_j, power_j, span_s)


@pytest.mark.parametrize("scale", [20.0, 0.05])
def test_a_counter_that_fails_its_start_up_check_is_swapped_for_power_x_time(scale: float) -> None:
    clock = FakeClock()
    integ = Integrator([device("a", counter=True)], host="h", clock=clock)
    counter_mj = 1_000_000.0
    for k in range(int(round(2.0 / PERIOD_S))):  # the counter runs `scale` x what power reads (300 W)
        counter_mj += 300.0 * scale * PERIOD_S * 1e3 if k else 0.0
        integ.add(Reading("a", k * PERIOD_S, energy_mj=counter_mj, power_w=300.0))
    clock.advance(2.0)
    (first,), _ = integ.take_intervals()
    power_j = integ.sampled_energy_j("a")
    assert first.figure.source == Source.SAMPLED and first.figure.energy_j == pytest.approx(power_j)
    assert first.figure.low_j <= power_j <= first.figure.high_j
    for k in range(int(round(2.0 / PERIOD_S)), int(round(3.0 / PERIOD_S))):  # later: power integrated
        counter_mj += 300.0 * scale * PERIOD_S * 1e3
        integ.add(Reading("a", k * PERIOD_S, energy_mj=counter_mj, power_w=300.0))
    clock.advance(1.0)
    (second,), _ = integ.take_intervals()
    e = by_uuid(integ, "a")
    assert second.figure.source == Source.SAMPLED
    assert first.figure.energy_j + second.figure.energy_j == pytest.approx(integ.sampled_energy_j("a"))
    assert e.figure.source == Source.SAMPLED and e.energy_j == pytest.approx(300.0 * (3.0 - PERIOD_S))
    assert e.figure.low_j <= e.energy_j <= e.figure.high_j
    assert e.counter_check is not None and e.counter_check[0] == pytest.approx(e.counter_check[1] * scale)
    assert any("at start-up: not trusted, power integrated" in n for n in e.notes), e.notes


def test_a_sound_counter_stays_a_counter() -> None:
    clock = FakeClock()
    integ = Integrator([device("a", counter=True)], host="h", clock=clock)
    feed(integ, "a", 0.0, 2.0, 300.0, counter_mj=1_000_000.0)
    clock.advance(2.0)
    (first,), _ = integ.take_intervals()
    e = by_uuid(integ, "a")
    assert first.figure.source == Source.COUNTER and e.figure.source == Source.COUNTER
    assert not any("not trusted" in n for n in e.notes)


def test_a_backwards_step_of_more_than_half_the_range_is_a_reset_even_without_a_power_limit(
    fake_clock: FakeClock,
) -> None:
    """A wrap adds less than half the counter's range: 40 J -> 3 J of a 100 J counter would be a 63 J
    wrap, so it is a reset even where no power limit bounds it (a mutation to the whole range survived)."""
    cpu = DeviceInfo("cpu", "cpu", Kind.CPU, Source.COUNTER, True, counter_range_mj=100_000.0)
    integ = Integrator([cpu], host="h", clock=fake_clock)
    integ.add(Reading("cpu", 0.0, energy_mj=40_000.0))
    integ.add(Reading("cpu", 10.0, energy_mj=3_000.0))
    e = by_uuid(integ, "cpu")
    assert e.energy_j == pytest.approx(3.0) and not any("wrapped" in n for n in e.notes)
