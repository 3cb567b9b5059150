"""The demo's MFU peak comes from the device catalog, never from the health check's matmul rate."""

from __future__ import annotations

import pytest

from wattlog.records import EnergyFigure, Kind, Source
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo
from wattlog.trainer.demo import published_peak


def _device(name: str, kind: Kind, source: Source) -> DeviceEnergy:
    info = DeviceInfo(name, name, kind, source, has_counter=False)
    return DeviceEnergy(info, EnergyFigure(kind, source, 1.0, 1.0, 1.0), None, 1, 0, 0.0)


def test_a_cpu_run_has_no_mfu_and_says_why() -> None:
    cpu = _device("estimate:cpu", Kind.CPU, Source.ESTIMATED)
    simulated = _device("GPU-sim-0 H100", Kind.GPU, Source.SIMULATED)  # simulated GPUs compute nothing
    peak, line = published_peak([cpu, simulated])
    assert peak is None and line == "MFU: - (no published peak FLOP/s for a CPU in the device catalog)"


def test_known_gpus_add_their_published_peaks() -> None:
    gpus = [_device(f"NVIDIA H100 80GB HBM3 #{i}", Kind.GPU, Source.COUNTER) for i in range(2)]
    peak, line = published_peak(gpus)
    assert peak == pytest.approx(2 * 989.4e12) and "1,979 TFLOP/s" in line
    peak, line = published_peak([*gpus, _device("NVIDIA L4", Kind.GPU, Source.COUNTER)])
    assert peak is None and "NVIDIA L4" in line
