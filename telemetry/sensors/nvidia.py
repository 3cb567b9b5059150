"""The NVIDIA backend: CUDA's visibility rules and an NVML sensor for the job's GPUs.

What is NVIDIA's stays here and in the modules it names: the NVML sensor
(nvml.py), its board families' sensor profiles (nvidia.toml) and its
visibility (CUDA_VISIBLE_DEVICES, then SLURM's GPU binding).
"""

from __future__ import annotations

from wattlog.telemetry.selection import NVIDIA_VISIBILITY, GpuSelection
from wattlog.telemetry.sensors.base import ProbeOptions, RuleVisibility, Sensor, sensor_or_reason
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.types import Vendor


class NvidiaBackend(RuleVisibility):
    """NVIDIA GPUs through NVML; `ProbeOptions.modules["pynvml"]` replaces nvidia-ml-py (tests)."""

    vendor = Vendor.NVIDIA
    rules = NVIDIA_VISIBILITY  # CUDA_VISIBLE_DEVICES (indices or UUIDs), else SLURM's binding

    def probe(self, selection: GpuSelection, options: ProbeOptions) -> Sensor | str:
        """An NvmlSensor over the selected GPUs, or why there is none (no driver, no GPU of the job)."""
        sensor = NvmlSensor(
            nvml=options.modules.get("pynvml"),
            include=selection.includes,
            clock=options.clock,
            slow_period_s=options.slow_period_s,
        )
        return sensor_or_reason(sensor, selection, "the driver lists no GPU")
