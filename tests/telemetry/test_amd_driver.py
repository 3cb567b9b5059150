"""AMD as its driver really behaves (issue 43): the stand-in's semantics, paced reads, stale counters."""

from __future__ import annotations

import struct

import pytest

from bench.windows import run as window_errors
from wattlog.clock import FakeClock
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.amdsmi_sensor import AmdSmiSensor
from wattlog.telemetry.sensors.fake_amdsmi import (
    COUNTER_RESOLUTION_UJ,
    ROCM_SMI_RESOLUTION_UJ,
    AmdFaults,
    FakeAmdSmi,
)
from wattlog.telemetry.sensors.simulated import SimulatedGpu
from wattlog.telemetry.sensors.traces import ConstantTrace, TrainingTrace
from wattlog.telemetry.types import DeviceEnergy, Vendor

MI300X = "AMD Instinct MI300X"


def mi300x(n: int = 2, watts: float | None = 500.0) -> list[SimulatedGpu]:
    """`n` MI300X at a constant `watts`, or on seeded training-like traces (None)."""
    return [
        SimulatedGpu(
            f"GPU-amd-{i:04d}",
            MI300X,
            ConstantTrace(watts)
            if watts is not None
            else TrainingTrace.generate(seed=i + 1, duration_s=600.0),
            power_limit_w=750.0,
            vendor=Vendor.AMD,
        )
        for i in range(n)
    ]


def sampled(smi: FakeAmdSmi, clock: FakeClock, seconds: float) -> tuple[list[DeviceEnergy], float]:
    """The real Sampler at 25 ms over `seconds`: each GPU's energy, and amdsmi calls per GPU per second."""
    sensor = AmdSmiSensor(smi, clock=clock)
    integ = Integrator(sensor.devices(), host="h", clock=clock)
    smi.calls.clear()
    t0 = clock.monotonic()
    Sampler([sensor], integ, period_s=0.025, clock=clock).run_until(t0 + seconds)
    return integ.snapshot(), smi.calls_per_gpu_per_s(clock.monotonic() - t0)


# -- the stand-in follows AMD's published semantics ------------------------------------------


def test_the_stand_ins_timestamp_is_taken_at_every_read_even_when_the_counter_has_not_moved(
    fake_clock: FakeClock,
) -> None:
    smi = FakeAmdSmi(mi300x(1), fake_clock)
    smi.amdsmi_init()
    [h] = smi.amdsmi_get_processor_handles()
    fake_clock.advance(1.0)
    first = smi.amdsmi_get_energy_count(h)
    fake_clock.advance(0.01)  # within one update of the accumulator (100 ms)
    second = smi.amdsmi_get_energy_count(h)
    assert second["energy_accumulator"] == first["energy_accumulator"]
    assert second["timestamp"] - first["timestamp"] == pytest.approx(1e7, abs=2)  # 10 ms later, in ns


def test_the_stand_ins_resolution_is_a_float32_and_its_unsupported_fields_say_na(
    fake_clock: FakeClock,
) -> None:
    smi = FakeAmdSmi(mi300x(1), fake_clock)
    smi.amdsmi_init()
    [h] = smi.amdsmi_get_processor_handles()
    resolution = smi.amdsmi_get_energy_count(h)["counter_resolution"]
    assert resolution == struct.unpack("f", struct.pack("f", 15.259))[0] == COUNTER_RESOLUTION_UJ
    assert resolution != 15.259
    power = smi.amdsmi_get_power_info(h)
    assert power["current_socket_power"] == 500 and power["average_socket_power"] == "N/A"  # an MI300
    assert power["gfx_voltage"] == "N/A" and power["power_limit"] == 750  # watts


def test_before_rocm_6_4_the_module_has_no_enumeration_info(fake_clock: FakeClock) -> None:
    assert not hasattr(
        FakeAmdSmi(mi300x(1), fake_clock, AmdFaults(no_enumeration=True)), "amdsmi_get_gpu_enumeration_info"
    )
    assert hasattr(FakeAmdSmi(mi300x(1), fake_clock), "amdsmi_get_gpu_enumeration_info")


def test_devices_asked_again_does_not_rerun_the_start_up_check(fake_clock: FakeClock) -> None:
    sensor = AmdSmiSensor(FakeAmdSmi(mi300x(1), fake_clock), clock=fake_clock, check_s=1.0)
    first = sensor.devices()
    t = fake_clock.monotonic()
    assert sensor.devices() == first and fake_clock.monotonic() == t  # the sampler asks again


# -- reads paced like NVIDIA's -----------------------------------------------------------------


def test_amd_reads_are_paced_at_most_15_amdsmi_calls_per_gpu_per_second(fake_clock: FakeClock) -> None:
    smi = FakeAmdSmi(mi300x(2, watts=None), fake_clock)
    energies, calls = sampled(smi, fake_clock, 30.0)
    print(f"amdsmi calls per GPU per second at 25 ms: {calls:.2f} (38e5f82: 83)")
    assert calls <= 15.0  # was 83: energy and power on every tick
    per_gpu = {name: n / 2 / 30.0 for name, n in smi.calls.items()}
    assert per_gpu["amdsmi_get_power_info"] == pytest.approx(1.0, abs=0.1)  # at the slow rate
    assert per_gpu["amdsmi_get_energy_count"] <= 11.0  # once per update of the accumulator (100 ms)
    for e in energies:
        assert e.gap_count == 0 and e.low_j < e.energy_j < e.high_j


def test_amd_window_edges_resolve_within_one_counter_update_at_under_15_calls() -> None:
    result = window_errors(windows=6, seed=3, amd=True)
    assert all(e.resolved and e.within_update for e in result.windows)
    assert sum(abs(e.rel) for e in result.windows) / len(result.windows) <= 0.001
    assert result.calls_per_s is not None and result.calls_per_s <= 15


# -- the counter's scale checked -------------------------------------------------------------


def flushed(smi: FakeAmdSmi, clock: FakeClock, seconds: float) -> DeviceEnergy:
    """The first GPU's energy after `seconds` of the Sampler at 25 ms, flushed every 10 s (as the agent)."""
    sensor = AmdSmiSensor(smi, clock=clock, check_s=0)
    integ = Integrator(sensor.devices(), host="h", clock=clock)
    sampler = Sampler([sensor], integ, period_s=0.025, clock=clock)
    for k in range(1, round(seconds / 10.0) + 1):
        sampler.run_until(10.0 * k)
        integ.take_intervals()
    return integ.snapshot()[0]


def test_a_counter_0_27_percent_off_power_x_time_is_said_and_carried_in_the_band(
    fake_clock: FakeClock,
) -> None:
    scale = ROCM_SMI_RESOLUTION_UJ / COUNTER_RESOLUTION_UJ  # 15.3 uJ per count taken for the float32 15.259
    e = flushed(FakeAmdSmi(mi300x(1), fake_clock, AmdFaults(counter_scale=scale)), fake_clock, 150.0)
    [note] = [n for n in e.notes if n.startswith("counter scale")]
    print(note)
    assert "off power x time by +0.27%" in note and "in the band" in note
    truth_j = e.energy_j / scale
    assert e.low_j <= truth_j and e.high_j >= e.energy_j * (1 + 2 * (scale - 1))  # both readings inside


def test_a_counter_on_its_scale_is_said_to_hold_and_a_noisy_load_does_not_pass_for_a_scale_error(
    fake_clock: FakeClock,
) -> None:
    e = flushed(FakeAmdSmi(mi300x(1), fake_clock), fake_clock, 150.0)
    assert any(n.startswith("counter scale checked") and "within 0.2 %" in n for n in e.notes)
    clock = FakeClock()
    scale = ROCM_SMI_RESOLUTION_UJ / COUNTER_RESOLUTION_UJ
    noisy = flushed(FakeAmdSmi(mi300x(1, watts=None), clock, AmdFaults(counter_scale=scale)), clock, 150.0)
    assert any(
        n.startswith("counter scale not resolved") for n in noisy.notes
    )  # 1 Hz samples of a training load


def test_a_counters_band_counts_the_sensors_publications_not_the_1_hz_power_reads() -> None:
    from wattlog.records import Kind, Source
    from wattlog.telemetry.devicestate import DeviceState, Totals
    from wattlog.telemetry.types import DeviceInfo

    d = DeviceState(DeviceInfo("a", "a", Kind.GPU, Source.COUNTER, True, power_limit_w=750.0))
    span = Totals(measured_s=60.0, publications=60)  # power read once a second beside the counter
    assert d.band_publications(span, Totals(), 0.1) == 60  # no counter value yet: what was read
    d.counter.last_counter_mj = 1.0
    assert d.band_publications(span, Totals(), 0.1) == 600  # the counter sums every 100 ms publication
