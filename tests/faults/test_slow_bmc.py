"""Faults: a BMC that answers late, or not at all.

On 38e5f82 the Redfish and DCMI sensors were read on the sampler's own thread: a BMC that
answered after 30 s held every other device's sampling (84 J of CPU and DRAM lost, NOT
VALID), and a failed BMC read printed "recorded as a gap" while no gap was stored (the
stretch was filled at the last good power). Now the BMC is read on its own thread
(:class:`OffThreadSensor`, a deadline per read) and a failed read is a stored gap.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.telemetry.fakes import ConstantSensor
from tests.telemetry.test_sampler import ListSink
from tests.waiting import wait_until
from wattlog.clock import FakeClock
from wattlog.errors import SensorError
from wattlog.records import Kind, Source
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.offthread import OffThreadSensor
from wattlog.telemetry.types import DeviceInfo, Reading

NODE = DeviceInfo("redfish:node", "node", Kind.NODE, Source.SAMPLED, has_counter=False)


class SlowBmc:
    """A BMC whose reads after the first `fast` ones block until `release` is set."""

    def __init__(self, fast: int = 1) -> None:
        self.fast, self.reads = fast, 0
        self.release = threading.Event()

    def devices(self) -> list[DeviceInfo]:
        return [NODE]

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        self.reads += 1
        if self.reads > self.fast:
            self.release.wait(30.0)
        return Reading(device.uuid, t_s, power_w=500.0, power_t_s=t_s, next_read_s=t_s + 0.05)

    def close(self) -> None:
        self.release.set()


def test_a_bmc_that_does_not_answer_never_stalls_the_other_devices() -> None:
    bmc = SlowBmc()
    cpu = ConstantSensor("cpu-0", 100.0)
    integ = Integrator([*cpu.devices(), NODE], host="h")
    sampler = Sampler([cpu, OffThreadSensor(bmc, deadline_s=0.3)], integ, period_s=0.01).start()
    try:
        wait_until(lambda: bmc.reads >= 2, 5.0, "the BMC was never asked again")
        started = sampler.stats().samples_total
        time.sleep(0.5)  # the BMC hangs meanwhile (38e5f82: the sampler hung with it)
        ticks = sampler.stats().samples_total - started
    finally:
        bmc.release.set()
        sampler.stop()
    assert ticks >= 10  # ~50 at 10 ms; 38e5f82: 0 (the thread waited on the BMC)
    cpu_energy = next(e for e in integ.snapshot() if e.device.uuid == "cpu-0")
    assert cpu_energy.gap_count == 0


def test_a_read_past_its_deadline_is_a_failed_read_until_the_bmc_answers() -> None:
    bmc = SlowBmc()
    clock = [0.0]
    sensor = OffThreadSensor(bmc, deadline_s=1.0, clock=lambda: clock[0])
    assert sensor.devices() == [NODE]
    first = sensor.read(NODE, 0.0)  # the read done at discovery
    assert first.power_w == 500.0
    clock[0] = 0.1
    again = sensor.read(NODE, 0.1)  # due: asks the worker; shows the same publication meanwhile
    assert again.power_t_s == first.power_t_s and again.next_read_s is None
    wait_until(lambda: bmc.reads == 2, 5.0, "the worker never read")
    clock[0] = 1.2
    with pytest.raises(SensorError, match="no answer in 1.0 s"):
        sensor.read(NODE, 1.2)
    bmc.release.set()
    got: list[Reading] = []

    def answered() -> bool:
        try:
            got.append(sensor.read(NODE, 1.3))
        except SensorError:
            return False
        return True

    wait_until(answered, 5.0, "the late answer never came")
    assert got[0].power_t_s == pytest.approx(0.1)  # stamped when it was asked for
    sensor.close()


def test_a_failed_read_between_two_good_ones_is_a_stored_gap_never_filled() -> None:
    clock = FakeClock()
    integ = Integrator([NODE], host="h", clock=clock)
    for t in (0.0, 1.0):
        integ.add(Reading(NODE.uuid, t, power_w=500.0, power_t_s=t, next_read_s=t + 1.0))
    integ.record_failure(NODE.uuid, 2.0, "SensorError: Redfish read failed (Timeout)", False)
    integ.add(Reading(NODE.uuid, 2.5, power_w=500.0, power_t_s=2.5, next_read_s=3.5))
    _, gaps = integ.take_intervals()
    assert len(gaps) == 1  # 38e5f82: none
    assert gaps[0].reason == "read failed: SensorError: Redfish read failed (Timeout)"
    assert gaps[0].duration_s == pytest.approx(1.5)
    node = next(e for e in integ.snapshot() if e.device.uuid == NODE.uuid)
    assert node.energy_j == pytest.approx(500.0)  # the first second only: the gap is not filled


class FailingBmc(SlowBmc):
    """A BMC whose reads after the first fail with the emulator's own SensorError."""

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        self.reads += 1
        if self.reads > self.fast:
            raise SensorError("Redfish GET /redfish/v1/Chassis/1U/Sensors/TotalPower failed (Timeout)")
        return Reading(device.uuid, t_s, power_w=500.0, power_t_s=t_s, next_read_s=t_s + 0.05)


def test_a_failed_bmc_read_is_stored_with_its_type_named_once() -> None:
    """The soak's stored gap read "SensorError: SensorError: Redfish GET ..." (the worker named the
    error's type, then the sampler named the SensorError it raised)."""
    bmc = FailingBmc()
    clock = [0.0]
    sensor = OffThreadSensor(bmc, deadline_s=1.0, clock=lambda: clock[0])
    sensor.devices()
    sensor.read(NODE, 0.0)  # the read done at discovery answers
    clock[0] = 0.1
    sensor.read(NODE, 0.1)  # due: the worker asks the BMC, which fails
    wait_until(lambda: bmc.reads == 2, 5.0, "the worker never read")
    sink = ListSink()
    sampler = Sampler([sensor], sink, period_s=0.01, clock=FakeClock())
    until = [0.0]

    def failed() -> bool:  # the worker's answer lands a moment after the BMC's read returns
        until[0] += 0.01
        sampler.run_until(until[0])
        return bool(sink.failures)

    wait_until(failed, 5.0, "the failure never reached the sampler")
    sensor.close()
    reason = sink.failures[0][2]
    assert reason.startswith("SensorError: Redfish GET") and reason.count("SensorError") == 1, reason


@pytest.mark.parametrize(("has_counter", "said"), [(False, "recorded as a gap"), (True, "counter covers")])
def test_a_failed_reads_note_says_what_the_ledger_will_hold(
    has_counter: bool, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A counter bridges a failed read exactly and no gap is stored: the note said "recorded as a
    gap" for it too (the soak's counter BMC)."""
    device = DeviceInfo("bmc", "node", Kind.NODE, Source.SAMPLED, has_counter=has_counter)
    failing = FailingBmc(fast=0)
    failing.devices = lambda: [device]  # type: ignore[method-assign]
    sampler = Sampler([failing], Integrator([device], host="h"), period_s=0.01, clock=FakeClock())
    with caplog.at_level("WARNING", logger="wattlog.telemetry.sampler"):
        sampler.run_until(0.02)
    [note] = [r.getMessage() for r in caplog.records if "read of bmc failed" in r.getMessage()]
    assert said in note, note
