# ruff: noqa: N802 - the functions keep pynvml's names
"""A minimal stand-in for NVML whose calls cost almost nothing, counting every call.

bench.sampler reads 8 "GPUs" through wattlog's real NVIDIA backend over this,
so the CPU it measures is wattlog's (sampler, backend, integrator), not a
simulator's: each field read is a few attribute stores into a preallocated
array, like the real binding's ctypes array, with the driver's timestamp
moving every 100 ms as a real board's publications do. It is not the fake
pynvml (telemetry.sensors.fake_pynvml), which replays exact power traces.
"""

from __future__ import annotations

import ctypes
import time
from collections import Counter
from typing import Any

import pynvml

_PUBLICATION_US = 100_000
_set = ctypes.Structure.__setattr__
_get = ctypes.Structure.__getattribute__


class StandInNvml:
    """`gpus` boards at constant power behind pynvml's names; `calls` counts each function.

    Every board publishes every 100 ms; with `staggered`, board i publishes i/gpus of a period
    after board 0 (each driver keeps its own timer; real boards need not publish together),
    else all publish at once.
    """

    NVMLError = pynvml.NVMLError

    def __init__(self, gpus: int, power_w: float = 300.0, *, staggered: bool = False) -> None:
        self.gpus = gpus
        self.power_mw = round(power_w * 1000)
        self.calls: Counter[str] = Counter()
        self._field_ids: list[list[int] | None] = [None] * gpus  # the layout of each board's array
        self._values: list[Any] = [None] * gpus
        self._energy_slot: list[int | None] = [None] * gpus  # where field 83 sits in it
        # the counters start a period back, so no board's first publication precedes them
        self._start_us = time.time_ns() // 1000 - _PUBLICATION_US
        self._phase_us = [i * _PUBLICATION_US // gpus if staggered else 0 for i in range(gpus)]
        self._published = [0] * gpus

    def nvmlInit(self) -> None:
        """Start."""
        self.calls["nvmlInit"] += 1

    def nvmlShutdown(self) -> None:
        """Stop."""
        self.calls["nvmlShutdown"] += 1

    def nvmlDeviceGetCount(self) -> int:
        """The number of boards."""
        self.calls["nvmlDeviceGetCount"] += 1
        return self.gpus

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        """The handle is the index."""
        self.calls["nvmlDeviceGetHandleByIndex"] += 1
        return index

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        """GPU-standin-N."""
        self.calls["nvmlDeviceGetUUID"] += 1
        return f"GPU-standin-{handle:04d}"

    def nvmlDeviceGetName(self, handle: int) -> str:
        """A board name."""
        self.calls["nvmlDeviceGetName"] += 1
        return "stand-in board"

    def nvmlDeviceGetFieldValues(self, handle: int, field_ids: list[int]) -> Any:
        """Power (186, mW) and energy (83, mJ), stamped with the latest 100 ms publication.

        A driver fills the array in C; here a new publication writes only what it changes (the
        stamps and the energy), so the bench times wattlog, not the stand-in.
        """
        self.calls["nvmlDeviceGetFieldValues"] += 1
        now_us = time.time_ns() // 1000
        published_us = now_us - (now_us - self._start_us - self._phase_us[handle]) % _PUBLICATION_US
        if field_ids != self._field_ids[handle]:
            self._values[handle] = self._layout(field_ids)
            self._field_ids[handle] = list(field_ids)
            energy = pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION
            self._energy_slot[handle] = field_ids.index(energy) if energy in field_ids else None
            self._published[handle] = 0
        values = self._values[handle]
        if self._published[handle] != published_us:
            self._published[handle] = published_us
            # ctypes' own setter, not pynvml's Python-level __setattr__ (~2 us a field)
            for value in values:
                _set(value, "timestamp", published_us)
            if (energy := self._energy_slot[handle]) is not None:
                _get(values[energy], "value").ullVal = (
                    (published_us - self._start_us) * self.power_mw // 1_000_000
                )
        return values

    def _layout(self, field_ids: list[int]) -> Any:
        """A fresh array for `field_ids`: every field answers, power in mW, energy in mJ."""
        values = (pynvml.c_nvmlFieldValue_t * len(field_ids))()
        for value, field_id in zip(values, field_ids, strict=True):
            _set(value, "fieldId", field_id)
            _set(value, "nvmlReturn", 0)
            if field_id == pynvml.NVML_FI_DEV_POWER_INSTANT:
                _set(value, "valueType", pynvml.NVML_VALUE_TYPE_UNSIGNED_INT)
                _get(value, "value").uiVal = self.power_mw
            elif field_id == pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
                _set(value, "valueType", pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG)
            else:
                _set(value, "nvmlReturn", pynvml.NVML_ERROR_NOT_SUPPORTED)
        return values

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        """Energy in mJ (probed once; field 83 carries it afterwards)."""
        self.calls["nvmlDeviceGetTotalEnergyConsumption"] += 1
        return 0

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: int) -> int:
        """700 W."""
        self.calls["nvmlDeviceGetEnforcedPowerLimit"] += 1
        return 700_000

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Any:
        """50 %."""
        self.calls["nvmlDeviceGetUtilizationRates"] += 1
        return pynvml.c_nvmlUtilization_t(gpu=50, memory=25)

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        """60 C."""
        self.calls["nvmlDeviceGetTemperature"] += 1
        return 60

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        """Half of 80 GB used."""
        self.calls["nvmlDeviceGetMemoryInfo"] += 1
        return pynvml.c_nvmlMemory_t(total=80 << 30, free=40 << 30, used=40 << 30)

    def per_gpu_per_s(self, seconds: float, since: Counter[str] | None = None) -> float:
        """Calls per GPU per second over `seconds`, counting from the `since` snapshot."""
        calls = self.calls - (since or Counter())
        return sum(calls.values()) / self.gpus / seconds
