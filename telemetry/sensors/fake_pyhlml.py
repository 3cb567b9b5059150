# ruff: noqa: N802 - the functions keep pyhlml's names
"""A pyhlml-compatible stand-in over simulated GPUs: Intel Gaudi's HLML names and units.

HLML (habanalabs' management library; Python binding `pyhlml`, shipped with the
Gaudi software stack) gives per device: the power in mW
(hlmlDeviceGetPowerUsage), the total energy in mJ since the driver loaded
(hlmlDeviceGetTotalEnergyConsumption), the default power limit in mW, the
utilisation in percent, memory in bytes, and the module id that
HABANA_VISIBLE_MODULES names. Names and UUIDs come back as bytes. Errors are
HLMLError with NVML-like codes (3: not supported). Figures read through it are
labelled `simulated`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wattlog.clock import Clock
from wattlog.telemetry.sensors.simulated import SimulatedGpu

HLML_ERROR_NOT_SUPPORTED = 3
HLML_ERROR_GPU_IS_LOST = 15


class HLMLError(Exception):
    """pyhlml's error, with HLML's return code in `value`."""

    def __init__(self, value: int) -> None:
        super().__init__(f"HLML error {value}")
        self.value = value


@dataclass(frozen=True, slots=True)
class _Handle:
    index: int


@dataclass(frozen=True, slots=True)
class _Memory:
    total: int
    used: int
    free: int


class FakeHlml:
    """Simulated Gaudi devices behind pyhlml's names.

    Args:
        gpus: The devices, in HLML index order.
        clock: Time source of the readings.
        module_ids: module_ids[i] is device i's module id (default: its index).
        no_counter: hlmlDeviceGetTotalEnergyConsumption answers NOT_SUPPORTED (older drivers).
    """

    HLMLError = HLMLError
    wattlog_simulated = True

    def __init__(
        self,
        gpus: Sequence[SimulatedGpu],
        clock: Clock,
        *,
        module_ids: Sequence[int] | None = None,
        no_counter: bool = False,
    ) -> None:
        self.gpus = list(gpus)
        self.wattlog_clock = clock
        self.module_ids = list(module_ids) if module_ids is not None else list(range(len(self.gpus)))
        self.no_counter = no_counter
        self.initialised = False

    def hlmlInit(self) -> None:
        """Start the library."""
        self.initialised = True

    def hlmlShutdown(self) -> None:
        """Stop the library."""
        self.initialised = False

    def hlmlDeviceGetCount(self) -> int:
        """How many devices."""
        return len(self.gpus)

    def hlmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        """The device at `index`."""
        return _Handle(index)

    def hlmlDeviceGetName(self, handle: _Handle) -> bytes:
        """The board name, as bytes."""
        return self.gpus[handle.index].name.encode()

    def hlmlDeviceGetUUID(self, handle: _Handle) -> bytes:
        """The UUID, as bytes."""
        return self.gpus[handle.index].uuid.encode()

    def hlmlDeviceGetModuleID(self, handle: _Handle) -> int:
        """The module id HABANA_VISIBLE_MODULES names."""
        return self.module_ids[handle.index]

    def hlmlDeviceGetPowerUsage(self, handle: _Handle) -> int:
        """Power, mW."""
        gpu, now = self._now(handle)
        return round(gpu.instant_power_w(now) * 1e3)

    def hlmlDeviceGetTotalEnergyConsumption(self, handle: _Handle) -> int:
        """Energy since the driver loaded, mJ."""
        gpu, now = self._now(handle)
        if self.no_counter:
            raise HLMLError(HLML_ERROR_NOT_SUPPORTED)
        return int(gpu.energy_mj(now))

    def hlmlDeviceGetPowerManagementDefaultLimit(self, handle: _Handle) -> int:
        """Default power limit, mW."""
        return round(self.gpus[handle.index].power_limit_w * 1e3)

    def hlmlDeviceGetUtilizationRates(self, handle: _Handle) -> int:
        """Utilisation over the last second, percent."""
        gpu, now = self._now(handle)
        return round(gpu.utilisation_pct(now))

    def hlmlDeviceGetMemoryInfo(self, handle: _Handle) -> _Memory:
        """Memory in bytes."""
        gpu = self.gpus[handle.index]
        used = gpu.memory_used_bytes
        return _Memory(gpu.memory_total_bytes, used, gpu.memory_total_bytes - used)

    def _now(self, handle: _Handle) -> tuple[SimulatedGpu, float]:
        if not self.initialised:
            raise HLMLError(1)  # HLML_ERROR_UNINITIALIZED
        gpu, now = self.gpus[handle.index], self.wattlog_clock.monotonic()
        if gpu.is_lost(now):
            raise HLMLError(HLML_ERROR_GPU_IS_LOST)
        return gpu, now
