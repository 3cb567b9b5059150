from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from wattlog.clock import FakeClock
from wattlog.records import Kind, Source
from wattlog.telemetry.selection import GpuSelection, VisibleDevices, job_selection
from wattlog.telemetry.sensors import DiscoveryConfig, discover
from wattlog.telemetry.sensors.base import Backend, ProbeOptions, Sensor
from wattlog.telemetry.sensors.discovery import GPU_BACKENDS, Discovery
from wattlog.telemetry.sensors.estimate import CPU_UUID, DRAM_UUID, EstimateConfig
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml
from wattlog.telemetry.sensors.simulated import SimulatedGpu, SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.telemetry.types import Vendor

DATA = Path(__file__).resolve().parents[1] / "data" / "powercap"
ALL = job_selection({})


def _nvml(n: int = 4, **options: bool) -> FakeNvml:
    return FakeNvml(simulated_gpus(n), FakeClock(), **options)


def _uuids(found: Discovery) -> list[str]:
    return [device.uuid for _, device in found.devices]


def test_bare_machine_gets_the_labelled_estimate_and_one_line_per_missing_backend(tmp_path: Path) -> None:
    found = discover(DiscoveryConfig(ALL, nvml=_nvml(driver_loaded=False), powercap_root=tmp_path / "none"))
    assert _uuids(found) == [CPU_UUID, DRAM_UUID]
    assert all(device.source is Source.ESTIMATED for _, device in found.devices)
    assert [note.split(":")[0] for note in found.notes] == ["NVIDIA", "AMD", "Intel Gaudi", "RAPL"]
    assert all("\n" not in note and "Traceback" not in note for note in found.notes)
    assert "amdsmi is not installed" in found.notes[1] and "no RAPL powercap tree" in found.notes[3]
    assert found.selection is ALL
    found.close()


def test_gpus_of_the_job_and_rapl_replace_the_estimate() -> None:
    selection = job_selection({"CUDA_VISIBLE_DEVICES": "0,2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    found = discover(DiscoveryConfig(selection, nvml=_nvml(4), powercap_root=DATA / "intel"))
    gpus = [device for _, device in found.devices if device.kind is Kind.GPU]
    assert [gpu.uuid for gpu in gpus] == ["GPU-sim-0000", "GPU-sim-0002"]
    assert CPU_UUID not in _uuids(found) and DRAM_UUID not in _uuids(found)
    assert {device.kind for _, device in found.devices} == {Kind.GPU, Kind.CPU, Kind.DRAM}
    # no amdsmi or pyhlml here: one line each
    assert [note.split(":")[0] for note in found.notes] == ["AMD", "Intel Gaudi"]
    assert len(found.sensors) == 2


def test_whole_node_measures_every_gpu() -> None:
    selection = job_selection({"CUDA_VISIBLE_DEVICES": "1"}, whole_node=True)
    found = discover(DiscoveryConfig(selection, nvml=_nvml(3), powercap_root=DATA / "intel"))
    assert [d.uuid for _, d in found.devices if d.kind is Kind.GPU] == [f"GPU-sim-000{i}" for i in range(3)]


def test_amd_rapl_measures_the_cpu_and_dram_is_estimated() -> None:
    found = discover(DiscoveryConfig(ALL, nvml=_nvml(driver_loaded=False), powercap_root=DATA / "amd"))
    kinds = {device.kind: device.source for _, device in found.devices}
    assert kinds == {Kind.CPU: Source.COUNTER, Kind.DRAM: Source.ESTIMATED}
    assert any("no dram zone" in note for note in found.notes)


def test_disabled_estimate_leaves_cpu_unmeasured_and_says_so(tmp_path: Path) -> None:
    found = discover(
        DiscoveryConfig(
            ALL,
            nvml=_nvml(driver_loaded=False),
            powercap_root=tmp_path,
            estimate=EstimateConfig(enabled=False),
        )
    )
    assert found.devices == ()
    assert any("estimate disabled: cpu/dram not measured" in note for note in found.notes)


def test_job_without_gpus_says_so() -> None:
    found = discover(
        DiscoveryConfig(
            job_selection({"CUDA_VISIBLE_DEVICES": ""}), nvml=_nvml(2), powercap_root=DATA / "intel"
        )
    )
    assert not any(device.kind is Kind.GPU for _, device in found.devices)
    assert found.notes[0] == "NVIDIA: no GPU of this job (CUDA_VISIBLE_DEVICES=)"
    assert [note.split(":")[0] for note in found.notes] == ["NVIDIA", "AMD", "Intel Gaudi"]


def test_extra_sensors_are_added_and_a_uuid_is_never_counted_twice(tmp_path: Path) -> None:
    found = discover(
        DiscoveryConfig(
            ALL,
            nvml=_nvml(2),
            powercap_root=tmp_path,
            extra=[SimulatedSensor(simulated_gpus(3))],  # GPU-sim-0000/1 are already NVML's
        )
    )
    uuids = _uuids(found)
    assert sorted(u for u in uuids if u.startswith("GPU-")) == [
        "GPU-sim-0000",
        "GPU-sim-0001",
        "GPU-sim-0002",
    ]
    assert len(uuids) == len(set(uuids))
    assert any("already measured, not counted twice" in note for note in found.notes)


@pytest.mark.parametrize("n", [0, 2])
def test_simulated_only_machine(tmp_path: Path, n: int) -> None:
    found = discover(
        DiscoveryConfig(
            ALL,
            nvml=_nvml(driver_loaded=False),
            powercap_root=tmp_path,
            extra=[SimulatedSensor(simulated_gpus(n))],
        )
    )
    assert [d.source for _, d in found.devices].count(Source.SIMULATED) == n


class _OtherVendor:
    """A second vendor's backend: its own visibility variable, simulated GPUs as its sensor."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.probed_with: list[str] = []

    @property
    def vendor(self) -> Vendor:
        return Vendor.AMD

    def visibility(self, environ: Mapping[str, str], *, whole_node: bool = False) -> GpuSelection:
        return job_selection(
            environ, whole_node=whole_node, rules=(VisibleDevices("HIP_VISIBLE_DEVICES", ""),)
        )

    def probe(self, selection: GpuSelection, options: ProbeOptions) -> Sensor | str:
        self.probed_with.append(selection.origin)
        if not self.n:
            return "no amdsmi here"
        gpus = [
            SimulatedGpu(f"GPU-amd-{i:04d}", "AMD Instinct (simulated)", ConstantTrace(300.0))
            for i in range(self.n)
        ]
        return SimulatedSensor([g for i, g in enumerate(gpus) if selection.includes(i, g.uuid)])


def test_discovery_loops_over_the_registered_backends_each_with_its_own_visibility(tmp_path: Path) -> None:
    other = _OtherVendor(3)
    environ = {"CUDA_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "1,2"}
    backends = [*(make() for make in GPU_BACKENDS), other]
    found = discover(
        DiscoveryConfig(nvml=_nvml(2), powercap_root=tmp_path / "none", backends=backends, environ=environ)
    )
    assert _uuids(found)[:3] == ["GPU-sim-0000", "GPU-amd-0001", "GPU-amd-0002"]
    assert other.probed_with == ["HIP_VISIBLE_DEVICES=1,2"]
    assert found.selection.origin == "CUDA_VISIBLE_DEVICES=0"


def test_a_backend_that_finds_nothing_leaves_a_note_named_by_its_vendor(tmp_path: Path) -> None:
    found = discover(
        DiscoveryConfig(ALL, nvml=_nvml(1), powercap_root=DATA / "intel", backends=[_OtherVendor(0)])
    )
    assert found.notes == ("AMD: no amdsmi here",)
    assert all(device.kind is not Kind.GPU for _, device in found.devices)


def test_nvidia_amd_and_gaudi_are_the_gpu_backends_registered() -> None:
    assert [make().vendor for make in GPU_BACKENDS] == [Vendor.NVIDIA, Vendor.AMD, Vendor.HABANA]
    assert all(isinstance(make(), Backend) for make in GPU_BACKENDS)
