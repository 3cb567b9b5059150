"""The NVIDIA backend: CUDA's visibility rules and an NVML sensor for the job's GPUs.

What is NVIDIA's stays here and in the modules it names: the NVML sensor
(nvml.py), its board families' sensor profiles (nvidia.toml) and its
visibility (CUDA_VISIBLE_DEVICES, then SLURM's GPU binding).
"""

from __future__ import annotations

from collections.abc import Mapping

from wattlog.errors import SensorError
from wattlog.telemetry.selection import NVIDIA_VISIBILITY, GpuSelection, job_selection
from wattlog.telemetry.sensors.base import ProbeOptions, Sensor
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.types import Vendor


class NvidiaBackend:
    """NVIDIA GPUs through NVML; `ProbeOptions.modules["pynvml"]` replaces nvidia-ml-py (tests)."""

    @property
    def vendor(self) -> Vendor:
        """NVIDIA."""
        return Vendor.NVIDIA

    def visibility(self, environ: Mapping[str, str], *, whole_node: bool = False) -> GpuSelection:
        """CUDA_VISIBLE_DEVICES (indices or UUIDs), else SLURM's GPU binding, else every GPU."""
        return job_selection(environ, whole_node=whole_node, rules=NVIDIA_VISIBILITY)

    def probe(self, selection: GpuSelection, options: ProbeOptions) -> Sensor | str:
        """An NvmlSensor over the selected GPUs, or why there is none (no driver, no GPU of the job)."""
        sensor = NvmlSensor(
            nvml=options.modules.get("pynvml"),
            include=selection.includes,
            clock=options.clock,
            slow_period_s=options.slow_period_s,
        )
        try:
            devices = sensor.devices()
        except SensorError as error:
            sensor.close()
            return str(error)
        if devices:
            return sensor
        sensor.close()
        return (
            "the driver lists no GPU" if selection.selects_all else f"no GPU of this job ({selection.origin})"
        )
