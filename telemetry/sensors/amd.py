"""The AMD backend: HIP/ROCr visibility and an amdsmi sensor for the job's Instinct GPUs.

What is AMD's stays here and in the modules it names: the amdsmi sensor
(amdsmi_sensor.py, with its stand-in fake_amdsmi.py), the board families'
sensor profiles (amd.toml) and the visibility rules (selection.AMD_VISIBILITY).
"""

from __future__ import annotations

from typing import Any

from wattlog.telemetry.selection import AMD_VISIBILITY, GpuSelection
from wattlog.telemetry.sensors.amdsmi_sensor import AmdSmiSensor
from wattlog.telemetry.sensors.base import ProbeOptions, RuleVisibility, Sensor, sensor_or_reason
from wattlog.telemetry.types import Vendor


class AmdBackend(RuleVisibility):
    """AMD GPUs through amdsmi.

    Args:
        amdsmi: An amdsmi-compatible module (tests: a FakeAmdSmi); else `ProbeOptions.modules["amdsmi"]`,
            else the real one.
        check_s: How long the start-up counter check watches each GPU (0: no check).
    """

    vendor = Vendor.AMD
    rules = AMD_VISIBILITY  # HIP_, else ROCR_VISIBLE_DEVICES, else SLURM's binding

    def __init__(self, amdsmi: Any | None = None, *, check_s: float = 1.0) -> None:
        self._amdsmi = amdsmi
        self._check_s = check_s

    def probe(self, selection: GpuSelection, options: ProbeOptions) -> Sensor | str:
        """An AmdSmiSensor over the selected GPUs, or why there is none (no ROCm, no GPU of the job)."""
        sensor = AmdSmiSensor(
            self._amdsmi if self._amdsmi is not None else options.modules.get("amdsmi"),
            include=selection.includes,
            clock=options.clock,
            slow_period_s=options.slow_period_s,
            check_s=self._check_s,
        )
        return sensor_or_reason(sensor, selection, "amdsmi lists no GPU")
