"""The sampler: absolute deadlines, overruns, failures recorded as gaps, lost devices."""

from __future__ import annotations

import math
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.waiting import wait_until
from wattlog.clock import FakeClock, SystemClock
from wattlog.errors import ConfigError, DeviceLost, SensorError
from wattlog.records import Kind, Source
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.types import DeviceInfo, Reading


def gpu(uuid: str) -> DeviceInfo:
    return DeviceInfo(uuid, uuid, Kind.GPU, Source.SIMULATED, has_counter=False)


class ListSink:
    """Keeps every reading and failure."""

    def __init__(self) -> None:
        self.readings: list[Reading] = []
        self.failures: list[tuple[str, float, str, bool]] = []

    def add(self, reading: Reading) -> None:
        self.readings.append(reading)

    def record_failure(self, device_uuid: str, t_s: float, reason: str, lost: bool) -> None:
        self.failures.append((device_uuid, t_s, reason, lost))


class ScriptedSensor:
    """Constant power; `faults` maps (uuid, read number) -> exception; `cost_s` advances a FakeClock."""

    def __init__(
        self,
        uuids: list[str],
        *,
        clock: FakeClock | None = None,
        cost_s: float = 0.0,
        faults: dict[tuple[str, int], Exception] | None = None,
    ) -> None:
        self._devices = [gpu(u) for u in uuids]
        self._clock = clock
        self.cost_s = cost_s
        self._faults = faults or {}
        self.reads: dict[str, int] = {u: 0 for u in uuids}

    def devices(self) -> list[DeviceInfo]:
        return list(self._devices)

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        n = self.reads[device.uuid]
        self.reads[device.uuid] = n + 1
        if self._clock is not None and self.cost_s:
            self._clock.advance(self.cost_s)
        fault = self._faults.get((device.uuid, n))
        if fault is not None:
            raise fault
        return Reading(device.uuid, t_s, power_w=100.0)

    def close(self) -> None:
        pass


def test_ticks_land_on_absolute_deadlines_so_lateness_never_accumulates(fake_clock: FakeClock) -> None:
    sensor = ScriptedSensor(["a"], clock=fake_clock, cost_s=0.004)  # each read takes 4 ms
    sink = ListSink()
    sampler = Sampler([sensor], sink, period_s=0.025, clock=fake_clock)
    sampler.run_until(100.0)
    times = [r.t_s for r in sink.readings]
    assert len(times) == 4000
    # tick k starts at exactly k x 25 ms: the 4 ms of work is not added to the period
    assert all(math.isclose(t, k * 0.025, abs_tol=1e-9) for k, t in enumerate(times))
    stats = sampler.stats()
    assert stats.samples_total == 4000 and stats.overruns_total == 0
    assert stats.achieved_period_s == pytest.approx(0.025)
    assert stats.lateness_max_s == pytest.approx(0.0, abs=1e-9)


def test_overruns_are_skipped_not_caught_up_in_a_burst() -> None:
    clock = FakeClock()
    slow = {3}  # the 4th read blocks for 2.5 periods

    class Blocking(ScriptedSensor):
        def read(self, device: DeviceInfo, t_s: float) -> Reading:
            if self.reads[device.uuid] in slow:
                clock.advance(0.0625)
            return super().read(device, t_s)

    sink = ListSink()
    sampler = Sampler([Blocking(["a"])], sink, period_s=0.025, clock=clock)
    sampler.run_until(0.2)
    times = [round(r.t_s, 4) for r in sink.readings]
    # read 3 (deadline 75 ms) ends at 137.5 ms: deadlines 100 and 125 ms are skipped, 150 ms is next
    assert times == [0.0, 0.025, 0.05, 0.075, 0.15, 0.175]
    assert sampler.stats().overruns_total == 2


def test_a_sensor_exception_is_recorded_and_sampling_goes_on(fake_clock: FakeClock) -> None:
    faults: dict[tuple[str, int], Exception] = {
        ("a", 2): SensorError("i2c timeout"),
        ("a", 3): RuntimeError("bug"),
    }
    sink = ListSink()
    sampler = Sampler([ScriptedSensor(["a"], faults=faults)], sink, period_s=0.025, clock=fake_clock)
    sampler.run_until(0.25)
    assert len(sink.readings) == 8
    assert [(u, round(t, 3), lost) for u, t, _, lost in sink.failures] == [
        ("a", 0.05, False),
        ("a", 0.075, False),
    ]
    assert "i2c timeout" in sink.failures[0][2]
    stats = sampler.stats()
    assert stats.errors_total == 2 and stats.reads_total == 10 and stats.samples_total == 10


def test_a_lost_device_stops_being_read_while_others_go_on(fake_clock: FakeClock) -> None:
    sensor = ScriptedSensor(["a", "b"], faults={("a", 2): DeviceLost("a", "GPU is lost")})
    sink = ListSink()
    sampler = Sampler([sensor], sink, period_s=0.025, clock=fake_clock)
    sampler.run_until(0.25)
    assert sensor.reads == {"a": 3, "b": 10}
    assert sink.failures == [("a", 0.05, "device a is lost: GPU is lost", True)]
    assert [r.device for r in sink.readings].count("b") == 10


def test_a_backend_whose_discovery_fails_does_not_stop_the_others(fake_clock: FakeClock) -> None:
    class Broken(ScriptedSensor):
        def devices(self) -> list[DeviceInfo]:
            raise SensorError("no driver")

    sink = ListSink()
    sampler = Sampler([Broken(["x"]), ScriptedSensor(["a"])], sink, clock=fake_clock)
    sampler.tick()
    assert [r.device for r in sink.readings] == ["a"]
    assert sampler.stats().errors_total == 1


def test_lateness_memory_is_bounded(fake_clock: FakeClock) -> None:
    sampler = Sampler([ScriptedSensor(["a"])], ListSink(), clock=fake_clock)
    sampler.run_until(600.0)  # 24 000 ticks
    before = len(sampler._lateness)  # noqa: SLF001 - the ring itself is what must stay bounded
    assert before == 4096 and sampler.stats().samples_total == 24_000


def test_the_thread_starts_and_stops() -> None:
    sink = ListSink()
    done = threading.Event()

    class Signal(ScriptedSensor):
        def read(self, device: DeviceInfo, t_s: float) -> Reading:
            if self.reads[device.uuid] >= 3:
                done.set()
            return super().read(device, t_s)

    with Sampler([Signal(["a"])], sink, period_s=0.005, clock=SystemClock()) as sampler:
        assert done.wait(5.0)
        assert sampler.stats().running
    assert not sampler.stats().running
    assert len(sink.readings) >= 4


def test_a_non_positive_period_is_refused() -> None:
    with pytest.raises(ConfigError, match="0.025"):
        Sampler([], ListSink(), period_s=0.0)


class PacedSensor(ScriptedSensor):
    """Devices publishing every `every_s` (grid offset `phase_s`); each reading says when the next is due."""

    def __init__(self, uuids: list[str], every_s: float, phase_s: float = 0.0) -> None:
        super().__init__(uuids)
        self.every_s, self.phase_s = every_s, phase_s

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        reading = super().read(device, t_s)
        published_s = self.phase_s + math.floor((t_s - self.phase_s) / self.every_s + 1e-9) * self.every_s
        return Reading(device.uuid, t_s, power_w=reading.power_w, next_read_s=published_s + self.every_s)


def test_ticks_with_no_device_due_are_slept_through_and_still_counted(fake_clock: FakeClock) -> None:
    sensor = PacedSensor(["a", "b"], every_s=0.1, phase_s=0.03)
    sink = ListSink()
    sampler = Sampler([sensor], sink, period_s=0.025, clock=fake_clock)
    sampler.run_until(10.0)
    times = [round(r.t_s, 6) for r in sink.readings if r.device == "a"]
    # each publication (30 ms + k x 100 ms) is read at the first deadline after it: 50 ms + k x 100 ms
    assert times[:4] == [0.0, 0.05, 0.15, 0.25] and len(times) == 101
    assert sensor.reads == {"a": 101, "b": 101}
    stats = sampler.stats()
    assert stats.samples_total == 400 - 1  # the deadlines passed, 0 to 9.95 s (9.975 s is never woken for)
    assert stats.idle_ticks_total == stats.samples_total - 101  # only the 101 reading deadlines woke it
    assert stats.achieved_period_s == pytest.approx(0.025, rel=1e-3)


def test_devices_due_at_different_phases_share_wakes_and_no_publication_is_missed(
    fake_clock: FakeClock,
) -> None:
    # 8 GPUs whose drivers publish every 100 ms at 8 phases 12.5 ms apart, and a 1 s estimate
    gpus = [PacedSensor([f"g{i}"], every_s=0.1, phase_s=0.0125 * i) for i in range(8)]
    estimate = PacedSensor(["cpu"], every_s=1.0, phase_s=0.31)
    sink = ListSink()
    sampler = Sampler([*gpus, estimate], sink, period_s=0.025, clock=fake_clock)
    sampler.run_until(10.0)
    times: dict[str, list[float]] = {}
    for sensor in [*gpus, estimate]:
        (uuid,) = sensor.reads
        every_s, phase_s = sensor.every_s, sensor.phase_s
        times[uuid] = [r.t_s for r in sink.readings if r.device == uuid]
        published = [phase_s + math.floor((t - phase_s) / every_s + 1e-9) * every_s for t in times[uuid]]
        # once two due times are known, every publication is read once, and by halfway to the next
        steps = {round((b - a) / every_s, 6) for a, b in zip(published[2:], published[3:], strict=False)}
        assert steps == {1.0}
        assert all(t - p <= every_s / 2 + 1e-9 for t, p in zip(times[uuid][1:], published[1:], strict=True))
    gpu_times = {t for i in range(8) for t in times[f"g{i}"]}
    assert set(times["cpu"][2:]) <= gpu_times  # the estimate is read on a GPU's wake
    stats = sampler.stats()
    wakes = stats.samples_total - stats.idle_ticks_total
    assert wakes <= 10.0 * 25  # 2-3 a publication; reading each device when due woke every deadline (400)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.03, 2.0), st.floats(0.0, 1.0)),  # (publication period, phase as a fraction)
        min_size=1,
        max_size=6,
    )
)
def test_shared_wakes_read_every_publication_once_for_any_periods_and_phases(
    devices: list[tuple[float, float]],
) -> None:
    clock = FakeClock()
    sensors = [
        PacedSensor([f"d{i}"], every_s=round(every_s, 3), phase_s=round(every_s * phase, 3))
        for i, (every_s, phase) in enumerate(devices)
    ]
    sink = ListSink()
    Sampler(sensors, sink, period_s=0.025, clock=clock).run_until(20.0)
    for sensor in sensors:
        (uuid,) = sensor.reads
        every_s, phase_s = sensor.every_s, sensor.phase_s
        times = [r.t_s for r in sink.readings if r.device == uuid]
        published = [phase_s + math.floor((t - phase_s) / every_s + 1e-9) * every_s for t in times]
        steps = [round((b - a) / every_s, 6) for a, b in zip(published[1:], published[2:], strict=False)]
        assert all(step == 1.0 for step in steps), steps  # none missed, none read twice
        # read by halfway to the next publication, or on the first deadline after it
        assert all(
            t - p <= max(every_s / 2, 0.025) + 1e-9 for t, p in zip(times[1:], published[1:], strict=True)
        )


def test_stop_is_noticed_at_once_while_nothing_is_due_for_an_hour() -> None:
    sensor = PacedSensor(["a"], every_s=3600.0)
    sampler = Sampler([sensor], ListSink(), period_s=0.025, clock=SystemClock()).start()
    wait_until(lambda: sensor.reads["a"], 5.0, "the sampler never read", 0.01)
    assert sensor.reads["a"] == 1
    time.sleep(0.1)  # the thread now waits for a deadline an hour away
    started = time.monotonic()
    sampler.stop(timeout_s=5.0)
    assert time.monotonic() - started < 0.5
    stats = sampler.stats()
    assert not stats.running
    assert sensor.reads["a"] == 1  # nothing was due: not read on the 25 ms ticks in between
    # the deadlines slept through until the stop are ticks: the achieved period is still 25 ms
    assert stats.samples_total >= 5 and stats.idle_ticks_total == stats.samples_total - 1
    assert stats.achieved_period_s == pytest.approx(0.025, rel=1e-6)


def test_stop_reports_and_logs_a_thread_held_by_a_blocked_read(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    reading = threading.Event()

    class Stuck(ScriptedSensor):
        def read(self, device: DeviceInfo, t_s: float) -> Reading:
            reading.set()
            release.wait(10.0)  # a driver call that does not return
            return super().read(device, t_s)

    sampler = Sampler(
        [Stuck(["a"])], ListSink(), period_s=0.025, clock=SystemClock(), name="wattlog-sampler-test"
    )
    sampler.start()
    assert reading.wait(5.0)
    with caplog.at_level("WARNING", logger="wattlog.telemetry.sampler"):
        stopped = sampler.stop(timeout_s=0.1)
    assert stopped is False
    assert sampler.running  # stats() would wait for the blocked tick to end
    assert any("wattlog-sampler-test" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)
    release.set()
    assert sampler.stop(timeout_s=5.0) is True
    assert not sampler.running and not sampler.stats().running


def test_stop_of_a_sampler_that_never_ran_is_true() -> None:
    assert Sampler([ScriptedSensor(["a"])], ListSink()).stop() is True
