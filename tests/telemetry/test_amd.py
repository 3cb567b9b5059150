"""The AMD backend, driven through the amdsmi stand-in with each of AMD's published sensor faults."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from rich.console import Console

from wattlog.clock import FakeClock
from wattlog.errors import DeviceLost
from wattlog.records import Source
from wattlog.telemetry.cli import print_discovery
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sensors.amd import AmdBackend
from wattlog.telemetry.sensors.amdsmi_sensor import AmdSmiSensor
from wattlog.telemetry.sensors.base import ProbeOptions, Sensor
from wattlog.telemetry.sensors.discovery import DiscoveryConfig, discover
from wattlog.telemetry.sensors.fake_amdsmi import AmdFaults, FakeAmdSmi
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml
from wattlog.telemetry.sensors.nvidia import NvidiaBackend
from wattlog.telemetry.sensors.simulated import SimulatedGpu
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.telemetry.types import DeviceEnergy, Vendor

MI300X = "AMD Instinct MI300X"


def amd_gpus(n: int = 2, watts: float = 500.0, **kwargs: object) -> list[SimulatedGpu]:
    return [
        SimulatedGpu(f"GPU-amd-{i:04d}", MI300X, ConstantTrace(watts), power_limit_w=750.0, vendor=Vendor.AMD)
        for i in range(n)
    ]


def fake(clock: FakeClock, n: int = 2, **faults: object) -> FakeAmdSmi:
    return FakeAmdSmi(amd_gpus(n), clock, AmdFaults(**faults))  # type: ignore[arg-type]


def run(sensor: Sensor, clock: FakeClock, seconds: float) -> list[DeviceEnergy]:
    """Read every device each 25 ms for `seconds` through an integrator; its snapshot."""
    devices = sensor.devices()
    integ = Integrator(devices, host="h", clock=clock)
    for _ in range(round(seconds / 0.025)):
        clock.advance(0.025)
        for device in devices:
            integ.add(sensor.read(device, clock.monotonic()))
    return integ.snapshot()


def test_devices_are_amd_with_their_boards_profile_power_cap_and_counter(fake_clock: FakeClock) -> None:
    devices = AmdSmiSensor(fake(fake_clock)).devices()
    assert [d.uuid for d in devices] == ["GPU-amd-0000", "GPU-amd-0001"]
    d = devices[0]
    assert (d.vendor, d.kind.value, d.source, d.has_counter, d.power_limit_w) == (
        Vendor.AMD,
        "gpu",
        Source.SIMULATED,
        True,
        750.0,
    )
    assert d.profile is not None and d.profile.family == "amd-mi300" and d.profile.sensor == "amdsmi"
    assert "amdsmi_get_energy_count" in d.note and "current_socket_power" in d.note


@pytest.mark.parametrize("old_key", [False, True], ids=["energy_accumulator", "power (amdsmi < 6.2.1)"])
def test_the_counter_times_its_resolution_gives_the_true_energy_under_either_key(
    fake_clock: FakeClock, old_key: bool
) -> None:
    [a, _] = run(AmdSmiSensor(fake(fake_clock, old_key=old_key)), fake_clock, 10.0)
    assert a.figure.source is Source.SIMULATED and a.gap_count == 0
    assert a.energy_j == pytest.approx(500.0 * 10.0, rel=0.02)  # within a counter update and a count
    assert a.low_j < a.energy_j < a.high_j


@pytest.mark.parametrize("na_value", ["N/A", 0xFFFFFFFF], ids=["N/A", "UINT32_MAX"])
def test_power_na_falls_back_to_the_average_reading(fake_clock: FakeClock, na_value: object) -> None:
    sensor = AmdSmiSensor(fake(fake_clock, power_na=True, na_value=na_value))
    [d, _] = sensor.devices()
    assert "average_socket_power" in d.note
    assert sensor.read(d, fake_clock.monotonic()).power_w == 500.0


def test_a_vm_guest_refusing_the_counter_is_measured_by_power_and_labelled(fake_clock: FakeClock) -> None:
    sensor = AmdSmiSensor(fake(fake_clock, vm_guest=True))
    [d, _] = sensor.devices()
    assert not d.has_counter and "not supported here (e.g. a VM guest)" in d.note
    [a, _] = run(AmdSmiSensor(fake(fake_clock, vm_guest=True)), fake_clock, 4.0)
    assert a.energy_j == pytest.approx(500.0 * 4.0, rel=0.02)


def test_a_counter_off_by_more_than_10x_fails_the_start_up_check_and_power_is_integrated(
    fake_clock: FakeClock,
) -> None:
    sensor = AmdSmiSensor(fake(fake_clock, counter_scale=1e4))
    [d, _] = sensor.devices()
    assert not d.has_counter and "failed the start-up check" in d.note
    [a, _] = run(AmdSmiSensor(fake(fake_clock, counter_scale=1e4)), fake_clock, 4.0)
    assert a.energy_j == pytest.approx(500.0 * 4.0, rel=0.02)  # not 10^4 times that


def test_a_counter_running_backwards_is_a_counted_reset_never_negative_or_huge(fake_clock: FakeClock) -> None:
    # the counter has counted ~1 h before we start, then steps back by 10^8 counts (1.5 kJ) at t = 3 s
    gpus = amd_gpus(1)
    for gpu in gpus:
        gpu.t0_s = -3600.0
    smi = FakeAmdSmi(gpus, fake_clock, AmdFaults(backwards_at_s=3.0, backwards_counts=10**8))
    [a] = run(AmdSmiSensor(smi), fake_clock, 6.0)
    assert a.gap_count >= 1
    assert 0 < a.energy_j <= 500.0 * 6.0 * 1.02  # not the hour before us, not negative


def test_an_impossible_jump_of_the_counter_is_a_gap_not_terawatt_hours(fake_clock: FakeClock) -> None:
    smi = fake(fake_clock, n=1, jump_at_s=3.0)
    [a] = run(AmdSmiSensor(smi), fake_clock, 6.0)
    assert a.gap_count >= 1
    assert 0 < a.energy_j <= 500.0 * 6.0 * 1.02


def test_hip_order_is_mapped_to_amdsmi_handles(fake_clock: FakeClock) -> None:
    # HIP sees amdsmi's handle 1 as device 0: HIP_VISIBLE_DEVICES=0 is amdsmi's second GPU
    smi = fake(fake_clock, hip_order=[1, 0])
    backend = AmdBackend(smi, check_s=0)
    selection = backend.visibility({"HIP_VISIBLE_DEVICES": "0"})
    sensor = backend.probe(selection, ProbeOptions(clock=fake_clock))
    assert not isinstance(sensor, str)
    assert [(d.uuid, d.index) for d in sensor.devices()] == [("GPU-amd-0001", 0)]


def test_hip_visible_devices_may_name_a_gpu_by_hips_uuid(fake_clock: FakeClock) -> None:
    backend = AmdBackend(fake(fake_clock), check_s=0)
    selection = backend.visibility({"HIP_VISIBLE_DEVICES": "GPU-0000000000000002"})
    sensor = backend.probe(selection, ProbeOptions(clock=fake_clock))
    assert not isinstance(sensor, str)
    assert [d.uuid for d in sensor.devices()] == ["GPU-amd-0001"]


def test_without_enumeration_info_amdsmi_order_is_used_and_said(fake_clock: FakeClock) -> None:
    [d, _] = AmdSmiSensor(fake(fake_clock, no_enumeration=True)).devices()
    assert d.index == 0 and "amdsmi order" in d.note


def test_rocr_and_slurm_visibility_apply_to_amd_but_cuda_visible_devices_does_not() -> None:
    backend = AmdBackend()
    assert backend.visibility({"ROCR_VISIBLE_DEVICES": "1"}).indices == frozenset({1})
    assert backend.visibility({"SLURM_JOB_GPUS": "2,3"}).indices == frozenset({2, 3})
    assert backend.visibility({"CUDA_VISIBLE_DEVICES": "0"}).selects_all


def test_a_lost_gpu_raises_device_lost(fake_clock: FakeClock) -> None:
    gpus = amd_gpus(1)
    gpus[0].lost_at_s = 1.0
    sensor = AmdSmiSensor(FakeAmdSmi(gpus, fake_clock))
    [d] = sensor.devices()
    fake_clock.advance(2.0)
    with pytest.raises(DeviceLost):
        sensor.read(d, fake_clock.monotonic())


def test_without_rocm_the_backend_leaves_one_line() -> None:
    result = AmdBackend().probe(AmdBackend().visibility({}), ProbeOptions())
    assert isinstance(result, str) and "amdsmi" in result


def test_a_mixed_node_is_discovered_once_per_device_each_with_its_vendors_visibility(
    fake_clock: FakeClock,
) -> None:
    nvidia_gpus = [SimulatedGpu(f"GPU-nv-{i}", "NVIDIA H100", ConstantTrace(400.0)) for i in range(2)]
    backends = [NvidiaBackend(), AmdBackend(fake(fake_clock), check_s=0)]
    environ = {"CUDA_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "0"}
    nvml = FakeNvml(nvidia_gpus, fake_clock)
    found = discover(DiscoveryConfig(nvml=nvml, backends=backends, environ=environ, clock=fake_clock))
    gpus = [(d.uuid, d.vendor) for _, d in found.devices if d.vendor is not None]
    assert gpus == [("GPU-nv-1", Vendor.NVIDIA), ("GPU-amd-0000", Vendor.AMD)]
    found.close()


def test_wattlog_sensors_names_each_devices_vendor_profile_scope_and_counter(
    fake_clock: FakeClock, tmp_path: Path
) -> None:
    found = discover(
        DiscoveryConfig(
            backends=[AmdBackend(fake(fake_clock, n=1, vm_guest=True), check_s=0)],
            environ={},
            powercap_root=tmp_path,
            clock=fake_clock,
        ),
    )
    console = Console(file=io.StringIO(), width=400, highlight=False)
    print_discovery(found, console)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    [row] = [line for line in out.splitlines() if "GPU-amd-0000" in line]
    assert "AMD" in row and "MI300X/MI325X" in row and "board" in row
    assert " no " in row and "VM guest" in row  # the counter's status, and why
    found.close()


def test_the_amd_bench_check_runs_on_the_stand_in_and_says_one_line_without_rocm(tmp_path: Path) -> None:
    import json

    from bench.amd_check import main

    out = tmp_path / "amd_check.json"
    assert main(["--simulate", "--seconds", "2", "--out", str(out)]) == 0
    [row] = json.loads(out.read_text())
    assert row["profile"] == "amd-mi300" and row["counter"] and row["energy_j"] > 0 and row["gaps"] == 0
    assert main(["--seconds", "1"]) == 2  # no amdsmi here


def test_the_missing_extra_is_named_verbatim_in_wattlog_sensors(tmp_path: Path) -> None:
    found = discover(DiscoveryConfig(backends=[AmdBackend()], environ={}, powercap_root=tmp_path))
    console = Console(file=io.StringIO(), width=400, highlight=False)
    print_discovery(found, console)
    assert "pip install 'wattlog[amd]'" in console.file.getvalue()  # type: ignore[attr-defined]
    found.close()


def test_an_amd_nodes_selection_line_is_hips_not_cudas(fake_clock: FakeClock, tmp_path: Path) -> None:
    found = discover(
        DiscoveryConfig(
            backends=[NvidiaBackend(), AmdBackend(fake(fake_clock), check_s=0)],
            nvml=FakeNvml([], fake_clock),
            environ={"HIP_VISIBLE_DEVICES": "1"},
            powercap_root=tmp_path,
            clock=fake_clock,
        ),
    )
    assert found.selection.origin == "HIP_VISIBLE_DEVICES=1"
    found.close()


def test_a_counter_that_stops_answering_mid_run_is_a_lost_device_with_a_gap_not_a_silent_stall(
    fake_clock: FakeClock,
) -> None:
    smi = fake(fake_clock, n=1)
    sensor = AmdSmiSensor(smi, check_s=0)
    devices = sensor.devices()
    integ = Integrator(devices, host="h", clock=fake_clock)
    for i in range(400):  # 10 s; the counter is refused from 5 s on
        fake_clock.advance(0.025)
        if i == 200:
            smi.faults = AmdFaults(vm_guest=True)
        try:
            integ.add(sensor.read(devices[0], fake_clock.monotonic()))
        except DeviceLost as lost:
            integ.record_failure(devices[0].uuid, fake_clock.monotonic(), str(lost), lost=True)
    [a] = integ.snapshot()
    assert a.lost and a.gap_s == pytest.approx(5.0, abs=0.1)
    assert a.energy_j == pytest.approx(2500.0, rel=0.02) and a.high_j >= 5000.0  # the band holds the truth


def test_amdsmi_without_rocm_is_silenced_and_says_to_install_rocm_not_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from wattlog.errors import SensorUnavailable
    from wattlog.telemetry.sensors.amdsmi_sensor import AmdSmiSensor

    # what amdsmi does when ROCm's library is missing: prints its own lines, then fails
    (tmp_path / "amdsmi.py").write_text(
        "import sys\nprint('ROCm library not found')\nprint('check LD_LIBRARY_PATH', file=sys.stderr)\n"
        "raise KeyError('ROCM_PATH')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    with pytest.raises(SensorUnavailable) as raised:
        AmdSmiSensor().devices()
    message = str(raised.value)
    assert "install ROCm" in message and "pip install" not in message  # the extra is installed
    out, err = capfd.readouterr()
    assert "ROCm library not found" not in out + err and "LD_LIBRARY_PATH" not in out + err


def test_amdsmi_not_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from wattlog.errors import SensorUnavailable
    from wattlog.telemetry.sensors.amdsmi_sensor import AmdSmiSensor

    monkeypatch.setitem(sys.modules, "amdsmi", None)
    with pytest.raises(SensorUnavailable, match=r"amdsmi is not installed: pip install 'wattlog\[amd\]'"):
        AmdSmiSensor().devices()
