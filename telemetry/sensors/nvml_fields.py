"""NVML vocabulary for the NVIDIA backend: return codes, field ids, the nvmlFieldValue_t layout, reads.

Only nvml.py imports this; nothing here imports pynvml (the functions take the module).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from wattlog.errors import DeviceLost, NotSupported, SensorError, SensorUnavailable
from wattlog.telemetry.publications import PublicationPeriod

# NVML return codes (stable across driver versions) -> wattlog errors. Codes not
# listed become a plain SensorError: the sampler records a gap and goes on.
ERROR_MAP: dict[int, type[SensorError]] = {
    1: SensorUnavailable,  # NVML_ERROR_UNINITIALIZED
    3: NotSupported,  # NVML_ERROR_NOT_SUPPORTED
    4: NotSupported,  # NVML_ERROR_NO_PERMISSION
    9: SensorUnavailable,  # NVML_ERROR_DRIVER_NOT_LOADED
    12: SensorUnavailable,  # NVML_ERROR_LIBRARY_NOT_FOUND
    13: NotSupported,  # NVML_ERROR_FUNCTION_NOT_FOUND (driver older than the binding)
    15: DeviceLost,  # NVML_ERROR_GPU_IS_LOST
    18: SensorUnavailable,  # NVML_ERROR_LIB_RM_VERSION_MISMATCH (driver updated, not reloaded)
    999: DeviceLost,  # NVML_ERROR_UNKNOWN
}
SUCCESS = 0
NO_DRIVER = (9, 12)
FI_DEV_POWER_INSTANT = 186  # needs nvidia-ml-py >= 11.525.112 and a driver >= 525
FI_DEV_TOTAL_ENERGY_CONSUMPTION = 83  # mJ since the driver loaded, as nvmlDeviceGetTotalEnergyConsumption
# nvmlFieldValue_t as nvml.h lays it out (40 bytes, native order): fieldId, scopeId, timestamp
# (us since the epoch), latencyUsec, valueType, nvmlReturn, and the value, an 8-byte union. One
# unpack reads a whole array in C: pynvml's structures decode in a Python-level __getattribute__
# (~1.5 us an attribute), and this is the hot path, once per GPU per driver publication.
_FIELD_VALUE = struct.Struct("=IIqqII8s")
# nvmlValueType_t -> the union's bytes read as that type (unknown types as unsigned long long)
_VALUE_TYPES = {
    0: struct.Struct("=d"),  # double
    1: struct.Struct("=I"),  # unsigned int
    2: struct.Struct("=Q"),  # unsigned long (64-bit on the platforms NVML ships for)
    3: struct.Struct("=Q"),  # unsigned long long
    4: struct.Struct("=q"),  # signed long long
    5: struct.Struct("=i"),  # signed int
    6: struct.Struct("=H"),  # unsigned short
}
_UNSIGNED_LONG_LONG = _VALUE_TYPES[3]
# A field timestamp older than this, or ahead of the read by more than that, is on another clock.
STAMP_MAX_AGE_S = 5.0
STAMP_MAX_AHEAD_S = 0.5
# Publications whose spacing gives a GPU's publication period (as Zeus infers it): the median
# of the last 16, once 5 are in.
_INTERVALS_KEPT = 16
_INTERVALS_NEEDED = 5
# A paced read is due this long after the driver's next publication is expected: a tick that
# lands a hair before it would read the old one again (a wasted call); one tick of delay costs
# nothing, since values are integrated on the driver's own times, not on when they were read.
PACE_MARGIN_S = 0.002
_NVML_TEMPERATURE_GPU = 0
PROFILES = "nvidia.toml"  # the board families' sensor profiles, beside this module
POWER_INSTANT = "power: NVML_FI_DEV_POWER_INSTANT"
POWER_AVERAGE = "power: nvmlDeviceGetPowerUsage (1 s average on Ampere+)"
ENERGY_COUNTER = "energy: nvmlDeviceGetTotalEnergyConsumption"
ENERGY_FIELD = " (field 83, read with power in one call)"
FIELDS_UNREADABLE = (
    "nvmlDeviceGetFieldValues unreadable in this binding ({error}): plain calls, paced by the counter's "
    "observed updates"
)


def translate(e: Exception, device: str, metric: str) -> SensorError:
    """The wattlog error for an NVMLError raised reading `metric` of `device`."""
    code = getattr(e, "value", None)
    cls = ERROR_MAP.get(code, SensorError) if isinstance(code, int) else SensorError
    if cls is NotSupported:
        return NotSupported(metric, device)
    if cls is DeviceLost:
        return DeviceLost(device, f"{metric}: {e}")
    if cls is SensorUnavailable:
        return SensorUnavailable(f"NVML stopped answering ({metric} on {device}: {e})")
    return SensorError(f"NVML {metric} on {device} failed: {e}")


@dataclass(slots=True)
class GpuState:
    """What one GPU offers, learned at devices() and narrowed as reads fail."""

    handle: Any
    has_counter: bool
    instant_field: bool
    energy_field: bool = False
    fields: list[int] = field(default_factory=list)  # asked together on every tick
    stamps: list[tuple[int, float | None]] = field(default_factory=lambda: [(0, None), (0, None)])
    slow_due_s: float = -math.inf
    bad_stamps: bool = False
    # the driver's publication period of (186, 83), from the intervals between their new stamps
    periods: tuple[PublicationPeriod, PublicationPeriod] = field(
        default_factory=lambda: (
            PublicationPeriod(_INTERVALS_KEPT, _INTERVALS_NEEDED),
            PublicationPeriod(_INTERVALS_KEPT, _INTERVALS_NEEDED),
        )
    )
    next_read_s: float | None = None  # no new publication before then (None: read every tick)
    unsupported: set[str] = field(default_factory=set)
    lost: str = ""  # the reason, once lost
    fallback_note: str = ""  # why the fields are not used, when the probe could not read them
    # a counter read without the driver's times: its last changed value, when seen, its update period
    change: tuple[float, float] | None = None
    updates: PublicationPeriod = field(
        default_factory=lambda: PublicationPeriod(_INTERVALS_KEPT, _INTERVALS_NEEDED)
    )

    def notes(self) -> list[str]:
        """What this GPU is read with, in words: power, energy, and why the fields are not used, if so."""
        energy = ENERGY_COUNTER + (ENERGY_FIELD if self.energy_field else "")
        return [
            POWER_INSTANT if self.instant_field else POWER_AVERAGE,
            energy if self.has_counter else "no energy counter",
            *([self.fallback_note] if self.fallback_note else []),
        ]

    def paced_by_counter(self, energy_mj: float, t_s: float) -> float | None:
        """When to read again a counter without the driver's times: one update period after it changed.

        A read that finds the value changed saw the update since the previous read, so the
        next one is due a period later (a hair before: the tick at the period reads it);
        one that finds it unchanged is read again on the next tick (None), so a late
        update is never skipped and the pace follows the counter, whatever the tick.
        """
        if self.change is not None and energy_mj == self.change[0]:
            return None
        if self.change is not None:
            self.updates.add(t_s - self.change[1])
        self.change = (energy_mj, t_s)
        period_s = self.updates.period_s
        return None if period_s is None else t_s + period_s - PACE_MARGIN_S


def unpack(values: Any) -> Iterator[tuple[int, int, int, float]]:
    """(fieldId, nvmlReturn, timestamp in us, value as a float) of each nvmlFieldValue_t in `values`."""
    for field_id, _, stamp_us, _, value_type, code, value in _FIELD_VALUE.iter_unpack(values):
        yield (
            field_id,
            code,
            stamp_us,
            float(_VALUE_TYPES.get(value_type, _UNSIGNED_LONG_LONG).unpack_from(value)[0]),
        )


def text(value: str | bytes) -> str:
    """Old bindings return bytes, new ones str."""
    return value.decode() if isinstance(value, bytes) else value


def power_limit(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetEnforcedPowerLimit(handle)) / 1e3


def energy(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))


def power_usage(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetPowerUsage(handle)) / 1e3


def utilisation(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)


def temperature(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetTemperature(handle, _NVML_TEMPERATURE_GPU))


def memory_used(nvml: Any, handle: Any) -> int:
    return int(nvml.nvmlDeviceGetMemoryInfo(handle).used)


MIG_NOTE = (
    "MIG enabled ({n} instances): the whole physical GPU's energy, counted once; not split over its "
    "instances (MIG has no per-instance power sensor), so a job on some of them is shown the whole GPU"
)
"""The note of a MIG-enabled GPU: wattlog refuses to attribute its energy to instances."""


def mig_instances(nvml: Any, handle: Any) -> list[str] | None:
    """UUIDs of the MIG instances of the GPU at `handle`; None if MIG is off or not supported.

    CUDA_VISIBLE_DEVICES may name an instance as ``MIG-<uuid>``, which matches its parent GPU
    only through this list (selection.GpuSelection.includes).
    """
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
        if current != getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1):
            return None
        count = nvml.nvmlDeviceGetMaxMigDeviceCount(handle)
    except (nvml.NVMLError, AttributeError):  # no MIG on this board, or bindings without it
        return None
    uuids = []
    for i in range(count):
        try:
            uuids.append(text(nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, i))))
        except nvml.NVMLError:  # an empty slot answers NOT_FOUND
            continue
    return uuids
