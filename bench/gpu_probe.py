"""NVML-side helpers of bench.gpu_check: call costs, update periods, a GetPowerUsage-only sensor, sinks.

Everything here takes the NVML module (pynvml or a FakeNvml) and a timer as
arguments, so the check runs unchanged against the simulated GPU.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from wattlog.errors import SensorError
from wattlog.records import Source
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.types import DeviceInfo, Reading

FI_DEV_POWER_INSTANT = 186  # NVML_FI_DEV_POWER_INSTANT
FI_DEV_TOTAL_ENERGY = 83  # NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION
POWER_USAGE_SUFFIX = "/power-usage"


def call_cost(
    nvml: Any,
    sensor: NvmlSensor,
    device: DeviceInfo,
    calls: int,
    timer: Callable[[], float],
    max_s: float = 10.0,
) -> dict[str, dict[str, Any]]:
    """Median, p99, max and mean time of one call, in microseconds, for each NVML query wattlog uses.

    Args:
        nvml: The NVML module (initialised: the sensor's devices() ran).
        sensor: The NVIDIA backend, for the cost of one full read (all metrics of one GPU).
        device: The GPU to read.
        calls: Calls per function.
        timer: Seconds, high resolution (time.perf_counter).
        max_s: Stop a function's series after this long.
    """
    handle = nvml.nvmlDeviceGetHandleByIndex(device.index or 0)

    def field_186() -> None:
        value = nvml.nvmlDeviceGetFieldValues(handle, [FI_DEV_POWER_INSTANT])[0]
        if int(value.nvmlReturn) != 0:
            raise nvml.NVMLError(int(value.nvmlReturn))

    def fields_186_83() -> None:  # the hot path: one call per GPU per tick
        for value in nvml.nvmlDeviceGetFieldValues(handle, [FI_DEV_POWER_INSTANT, FI_DEV_TOTAL_ENERGY]):
            if int(value.nvmlReturn) != 0:
                raise nvml.NVMLError(int(value.nvmlReturn))

    t_s = [0.0]

    def hot_read() -> None:  # the backend's read between slow metrics (its 1 s deadline not due)
        t_s[0] += 1e-6
        sensor.read(device, t_s[0])

    def slow_read() -> None:  # the backend's read with utilisation, temperature, memory and limit
        t_s[0] += 1e6
        sensor.read(device, t_s[0])

    functions: dict[str, Callable[[], Any]] = {
        "nvmlDeviceGetFieldValues([186, 83])": fields_186_83,
        "nvmlDeviceGetTotalEnergyConsumption": lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle),
        "nvmlDeviceGetFieldValues([186])": field_186,
        "nvmlDeviceGetPowerUsage": lambda: nvml.nvmlDeviceGetPowerUsage(handle),
        "nvmlDeviceGetUtilizationRates": lambda: nvml.nvmlDeviceGetUtilizationRates(handle),
        "nvmlDeviceGetTemperature": lambda: nvml.nvmlDeviceGetTemperature(handle, 0),
        "nvmlDeviceGetMemoryInfo": lambda: nvml.nvmlDeviceGetMemoryInfo(handle),
        "nvmlDeviceGetEnforcedPowerLimit": lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle),
        "NvmlSensor.read (hot path)": hot_read,
        "NvmlSensor.read (with slow metrics)": slow_read,
    }
    out: dict[str, dict[str, Any]] = {}
    for name, call in functions.items():
        times_us: list[float] = []
        error = ""
        start_s = timer()
        for _ in range(calls):
            t0 = timer()
            try:
                call()
            except (nvml.NVMLError, SensorError) as e:
                error = str(e)
                break
            times_us.append((timer() - t0) * 1e6)
            if timer() - start_s > max_s:
                break
        out[name] = {"calls": len(times_us), "error": error, **latency_us(times_us)}
    return out


def latency_us(times_us: list[float]) -> dict[str, float | None]:
    """median_us, p99_us, max_us, mean_us of a series (None when empty); p99 by nearest rank."""
    if not times_us:
        return {"median_us": None, "p99_us": None, "max_us": None, "mean_us": None}
    ordered = sorted(times_us)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]
    return {
        "median_us": statistics.median(ordered),
        "p99_us": p99,
        "max_us": ordered[-1],
        "mean_us": statistics.fmean(ordered),
    }


class PowerUsageSensor:
    """nvmlDeviceGetPowerUsage alone (a 1 s trailing average on Hopper), as a device of its own.

    Its device is the GPU's with POWER_USAGE_SUFFIX appended to the UUID and no
    counter, so the integrator keeps a trapezoid over it beside the backend's.

    Args:
        nvml: The NVML module (initialised).
        device: The GPU, as the NVIDIA backend lists it.
    """

    def __init__(self, nvml: Any, device: DeviceInfo) -> None:
        self._nvml = nvml
        self._gpu = device
        self._handle: Any = None

    def devices(self) -> list[DeviceInfo]:
        """The one pseudo-device."""
        source = Source.SIMULATED if self._gpu.source is Source.SIMULATED else Source.SAMPLED
        return [
            replace(
                self._gpu,
                uuid=self._gpu.uuid + POWER_USAGE_SUFFIX,
                source=source,
                has_counter=False,
                note="power: nvmlDeviceGetPowerUsage only",
            )
        ]

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """Power from nvmlDeviceGetPowerUsage, watts."""
        if self._handle is None:
            self._handle = self._nvml.nvmlDeviceGetHandleByIndex(self._gpu.index or 0)
        try:
            power_w = float(self._nvml.nvmlDeviceGetPowerUsage(self._handle)) / 1e3
        except self._nvml.NVMLError as e:
            raise SensorError(f"nvmlDeviceGetPowerUsage on {self._gpu.uuid} failed: {e}") from e
        return Reading(device=device.uuid, t_s=t_s, power_w=power_w)

    def close(self) -> None:
        """Nothing to release (the check owns NVML's init)."""


@dataclass
class SpanSink:
    """Hands readings from `from_s` on to an integrator, keeping each device's first and last reading time.

    It also keeps the first and last counter change seen: a counter that updates
    every ~100 ms lags by up to an update at both ends of a run, while the time
    between two changes seen by a drift-free sampler is off by one sampling
    period at most (and by none when the update period is a multiple of it).
    """

    integrator: Integrator
    from_s: float = -math.inf
    first_s: dict[str, float] = field(default_factory=dict)
    last_s: dict[str, float] = field(default_factory=dict)
    failures: int = 0
    _counter: dict[str, float] = field(default_factory=dict)
    _first_change: dict[str, tuple[float, float]] = field(default_factory=dict)
    _last_change: dict[str, tuple[float, float]] = field(default_factory=dict)

    def add(self, reading: Reading) -> None:
        """See :class:`~wattlog.telemetry.sampler.ReadingSink`."""
        if reading.t_s < self.from_s:
            return
        device, energy_mj = reading.device, reading.energy_mj
        self.first_s.setdefault(device, reading.t_s)
        self.last_s[device] = reading.t_s
        if energy_mj is not None:
            previous = self._counter.get(device)
            if previous is not None and energy_mj > previous:
                self._first_change.setdefault(device, (reading.t_s, energy_mj))
                self._last_change[device] = (reading.t_s, energy_mj)
            self._counter[device] = energy_mj
        self.integrator.add(reading)

    def counter_mean_w(self, device_uuid: str) -> float | None:
        """Mean power between the first and the last counter change seen, watts (None: too few)."""
        first, last = self._first_change.get(device_uuid), self._last_change.get(device_uuid)
        if first is None or last is None or last[0] <= first[0]:
            return None
        return (last[1] - first[1]) / 1e3 / (last[0] - first[0])

    def record_failure(self, device_uuid: str, t_s: float, reason: str, lost: bool) -> None:
        """See :class:`~wattlog.telemetry.sampler.ReadingSink`."""
        if t_s < self.from_s:
            return
        self.failures += 1
        self.integrator.record_failure(device_uuid, t_s, reason, lost)

    def span_s(self, device_uuid: str) -> float:
        """Seconds from the device's first reading to its last (0 without two readings)."""
        return self.last_s.get(device_uuid, 0.0) - self.first_s.get(device_uuid, 0.0)


@dataclass
class ChangeSink:
    """Times at which the counter and the power reading changed value (for update periods)."""

    counter_changes_s: list[float] = field(default_factory=list)
    power_changes_s: list[float] = field(default_factory=list)
    failures: int = 0
    _last: Reading | None = None

    def add(self, reading: Reading) -> None:
        """See :class:`~wattlog.telemetry.sampler.ReadingSink`."""
        last = self._last
        if last is not None:
            if reading.energy_mj is not None and reading.energy_mj != last.energy_mj:
                self.counter_changes_s.append(reading.t_s)
            if reading.power_w is not None and reading.power_w != last.power_w:
                self.power_changes_s.append(reading.t_s)
        self._last = reading

    def record_failure(self, device_uuid: str, t_s: float, reason: str, lost: bool) -> None:
        """See :class:`~wattlog.telemetry.sampler.ReadingSink`."""
        self.failures += 1


def update_period(changes_s: list[float]) -> dict[str, float | None]:
    """Median time between changes and the period fitted over the whole series, seconds.

    A value published twice in a row is missed as a change; the fit divides the
    whole span by the number of median intervals in it, so such misses don't bias it.
    """
    if len(changes_s) < 3:
        return {"changes": len(changes_s), "median_s": None, "fitted_s": None}
    intervals = [b - a for a, b in zip(changes_s, changes_s[1:], strict=False)]
    median_s = statistics.median(intervals)
    span_s = changes_s[-1] - changes_s[0]
    fitted_s = span_s / max(round(span_s / median_s), 1) if median_s > 0 else None
    return {"changes": len(changes_s), "median_s": median_s, "fitted_s": fitted_s}
