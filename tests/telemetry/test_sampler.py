"""The sampler: absolute deadlines, overruns, failures recorded as gaps, lost devices."""

from __future__ import annotations

import math
import threading

import pytest

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
