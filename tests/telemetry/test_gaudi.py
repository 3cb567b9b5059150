"""The Intel Gaudi backend, driven through the pyhlml stand-in."""

from __future__ import annotations

import pytest

from wattlog.clock import FakeClock
from wattlog.errors import DeviceLost
from wattlog.records import Source
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sensors.base import ProbeOptions
from wattlog.telemetry.sensors.fake_pyhlml import FakeHlml
from wattlog.telemetry.sensors.gaudi import GaudiBackend, HlmlSensor
from wattlog.telemetry.sensors.simulated import SimulatedGpu
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.telemetry.types import Vendor


def gaudis(n: int = 2) -> list[SimulatedGpu]:
    return [
        SimulatedGpu(
            f"01-{i:02d}-gaudi", "HL-325L", ConstantTrace(600.0), power_limit_w=900.0, vendor=Vendor.HABANA
        )
        for i in range(n)
    ]


def test_devices_are_gaudi_with_the_gaudi3_profile_power_limit_and_counter(fake_clock: FakeClock) -> None:
    [d, _] = HlmlSensor(FakeHlml(gaudis(), fake_clock)).devices()
    assert (d.vendor, d.source, d.has_counter, d.power_limit_w) == (
        Vendor.HABANA,
        Source.SIMULATED,
        True,
        900.0,
    )
    assert d.profile is not None and d.profile.family == "gaudi3" and d.profile.sensor == "HLML"


@pytest.mark.parametrize("no_counter", [False, True], ids=["counter", "power-only"])
def test_energy_in_mj_from_the_driver_counter_or_integrated_power(
    fake_clock: FakeClock, no_counter: bool
) -> None:
    sensor = HlmlSensor(FakeHlml(gaudis(1), fake_clock, no_counter=no_counter))
    devices = sensor.devices()
    assert devices[0].has_counter is not no_counter
    integ = Integrator(devices, host="h", clock=fake_clock)
    for _ in range(200):
        fake_clock.advance(0.025)
        integ.add(sensor.read(devices[0], fake_clock.monotonic()))
    [energy] = integ.snapshot()
    assert energy.energy_j == pytest.approx(600.0 * 5.0, rel=0.03) and energy.gap_count == 0


def test_habana_visible_modules_select_by_module_id_not_hlml_index(fake_clock: FakeClock) -> None:
    backend = GaudiBackend(FakeHlml(gaudis(), fake_clock, module_ids=[1, 0]))
    sensor = backend.probe(
        backend.visibility({"HABANA_VISIBLE_MODULES": "0"}), ProbeOptions(clock=fake_clock)
    )
    assert not isinstance(sensor, str)
    assert [(d.uuid, d.index) for d in sensor.devices()] == [("01-01-gaudi", 0)]


def test_a_lost_device_raises_device_lost(fake_clock: FakeClock) -> None:
    gpus = gaudis(1)
    gpus[0].lost_at_s = 1.0
    sensor = HlmlSensor(FakeHlml(gpus, fake_clock))
    [d] = sensor.devices()
    fake_clock.advance(2.0)
    with pytest.raises(DeviceLost):
        sensor.read(d, fake_clock.monotonic())


def test_without_pyhlml_the_backend_leaves_one_line() -> None:
    result = GaudiBackend().probe(GaudiBackend().visibility({}), ProbeOptions())
    assert isinstance(result, str) and "pyhlml" in result


def test_a_counter_that_stops_answering_mid_run_marks_the_device_lost(fake_clock: FakeClock) -> None:
    hlml = FakeHlml(gaudis(1), fake_clock)
    sensor = HlmlSensor(hlml)
    [d] = sensor.devices()
    fake_clock.advance(0.1)
    assert sensor.read(d, fake_clock.monotonic()).energy_mj is not None
    hlml.no_counter = True
    with pytest.raises(DeviceLost, match="counter stopped answering"):
        sensor.read(d, fake_clock.monotonic())
