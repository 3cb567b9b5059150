# ruff: noqa: N802, N803 - the functions keep pynvml's names
"""A pynvml-compatible module over simulated GPUs.

NVML clients (wattlog's own NVIDIA backend, CodeCarbon, Zeus) run unchanged
against it, on the very same trace, so their figures can be scored against the
trace's exact integral. Errors are the real pynvml's classes, so
`except pynvml.NVMLError_NotSupported` in a client behaves as on a real GPU;
constants and structs are the real module's too.

    fake = FakeNvml(simulated_gpus(2), clock)
    with install(fake):            # sys.modules["pynvml"] is the fake inside
        import pynvml              # -> fake
        run_the_client()

Install before the client imports pynvml (a client that already did keeps the
real module). Functions it does not simulate raise NVML_ERROR_NOT_SUPPORTED.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pynvml

from wattlog.clock import Clock
from wattlog.telemetry.sensors.simulated import SimulatedGpu

DRIVER_VERSION = "550.54.15 (simulated)"
NVML_VERSION = "12.550.54.15"
CUDA_DRIVER_VERSION = 12040
_HOPPER_ARCH = 9  # NVML_DEVICE_ARCH_HOPPER
_MW_PER_W = 1000
_POWER_FIELDS = (pynvml.NVML_FI_DEV_POWER_INSTANT, pynvml.NVML_FI_DEV_POWER_AVERAGE)


@dataclass(frozen=True, slots=True)
class _Handle:
    """An opaque device handle, as nvmlDeviceGetHandleByIndex returns."""

    index: int


def _error(code: int) -> pynvml.NVMLError:
    """The real pynvml error for `code` (NVMLError's constructor picks the subclass)."""
    return pynvml.NVMLError(code)


class FakeNvml(ModuleType):
    """Simulated GPUs behind pynvml's function names and units (mW, mJ, bytes, C).

    Args:
        gpus: The GPUs, in NVML index order.
        clock: Time source; readings are taken at clock.monotonic().
        supports_instant_field: Whether field 186 (NVML_FI_DEV_POWER_INSTANT) and 185 exist
            (drivers before 525 lack them: the field returns NOT_SUPPORTED).
        supports_energy: Whether nvmlDeviceGetTotalEnergyConsumption works (pre-Volta boards: no).
        driver_loaded: False makes nvmlInit raise NVMLError_LibraryNotFound, as on a machine
            without the NVIDIA driver.
        unsupported: Names of functions that raise NOT_SUPPORTED on every device
            (e.g. {"nvmlDeviceGetTemperature"}).
        field_timestamps: False stamps every field value 0, as drivers and bindings without
            field timestamps do (wattlog then reads on its own read times).

    Attributes:
        init_calls: How many times nvmlInit/nvmlInitWithFlags succeeded.
        shutdown_calls: How many times nvmlShutdown succeeded.
        calls: Count of calls per function name (to check fallbacks are remembered).
    """

    WATTLOG_SIMULATED = True  # lets wattlog's NVIDIA backend label figures `simulated`

    def __init__(
        self,
        gpus: Sequence[SimulatedGpu],
        clock: Clock,
        *,
        supports_instant_field: bool = True,
        supports_energy: bool = True,
        driver_loaded: bool = True,
        unsupported: Collection[str] = (),
        field_timestamps: bool = True,
    ) -> None:
        super().__init__("pynvml", "pynvml-compatible fake over wattlog's simulated GPUs")
        self._gpus = list(gpus)
        self._clock = clock
        self._supports_instant_field = supports_instant_field
        self._supports_energy = supports_energy
        self._driver_loaded = driver_loaded
        self._unsupported = frozenset(unsupported)
        self._field_timestamps = field_timestamps
        self._refcount = 0
        self.init_calls = 0
        self.shutdown_calls = 0
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        """Constants, structs and error classes come from the real pynvml."""
        value = getattr(pynvml, name)  # AttributeError for names pynvml lacks too
        if name.startswith("nvml") and callable(value) and not isinstance(value, type):
            return self._not_simulated(name)
        return value

    @staticmethod
    def _not_simulated(name: str) -> Callable[..., Any]:
        def call(*_args: Any, **_kwargs: Any) -> Any:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)

        call.__name__ = name
        return call

    @property
    def wattlog_clock(self) -> Clock:
        """The clock the field timestamps come from (wattlog's NVIDIA backend reads them on it)."""
        return self._clock

    # -- plumbing -----------------------------------------------------------

    def _enter(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        if self._refcount == 0:
            raise _error(pynvml.NVML_ERROR_UNINITIALIZED)
        if name in self._unsupported:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def _gpu(self, name: str, handle: _Handle) -> tuple[SimulatedGpu, float]:
        """Check state, resolve the handle; the GPU and the time now."""
        self._enter(name)
        if not isinstance(handle, _Handle) or not 0 <= handle.index < len(self._gpus):
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        gpu, t_s = self._gpus[handle.index], self._clock.monotonic()
        if gpu.is_lost(t_s):
            raise _error(pynvml.NVML_ERROR_GPU_IS_LOST)
        return gpu, t_s

    # -- library ------------------------------------------------------------

    def nvmlInitWithFlags(self, flags: int) -> None:
        """Start the (simulated) library; fails like the real one when no driver is loaded."""
        self.calls["nvmlInitWithFlags"] = self.calls.get("nvmlInitWithFlags", 0) + 1
        if not self._driver_loaded:
            raise _error(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
        self._refcount += 1
        self.init_calls += 1

    def nvmlInit(self) -> None:
        """nvmlInitWithFlags(0)."""
        self.nvmlInitWithFlags(0)

    def nvmlShutdown(self) -> None:
        """Release one init."""
        self._enter("nvmlShutdown")
        self._refcount -= 1
        self.shutdown_calls += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        """A driver version string that says it is simulated."""
        self._enter("nvmlSystemGetDriverVersion")
        return DRIVER_VERSION

    def nvmlSystemGetNVMLVersion(self) -> str:
        """The NVML version string."""
        self._enter("nvmlSystemGetNVMLVersion")
        return NVML_VERSION

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        """CUDA driver version as an int (12040 = 12.4)."""
        self._enter("nvmlSystemGetCudaDriverVersion")
        return CUDA_DRIVER_VERSION

    # -- devices ------------------------------------------------------------

    def nvmlDeviceGetCount(self) -> int:
        """Number of GPUs (lost ones included, as the real driver does)."""
        self._enter("nvmlDeviceGetCount")
        return len(self._gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        """Handle of the GPU at `index`."""
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self._gpus):
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return _Handle(index)

    def nvmlDeviceGetHandleByUUID(self, uuid: str | bytes) -> _Handle:
        """Handle of the GPU with `uuid`."""
        self._enter("nvmlDeviceGetHandleByUUID")
        key = uuid.decode() if isinstance(uuid, bytes) else uuid
        for i, gpu in enumerate(self._gpus):
            if gpu.uuid == key:
                return _Handle(i)
        raise _error(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetUUID(self, handle: _Handle) -> str:
        """The GPU's UUID."""
        return self._gpu("nvmlDeviceGetUUID", handle)[0].uuid

    def nvmlDeviceGetName(self, handle: _Handle) -> str:
        """The board name."""
        return self._gpu("nvmlDeviceGetName", handle)[0].name

    def nvmlDeviceGetIndex(self, handle: _Handle) -> int:
        """The NVML index."""
        self._gpu("nvmlDeviceGetIndex", handle)
        return handle.index

    def nvmlDeviceGetArchitecture(self, handle: _Handle) -> int:
        """NVML_DEVICE_ARCH_HOPPER."""
        self._gpu("nvmlDeviceGetArchitecture", handle)
        return _HOPPER_ARCH

    def nvmlDeviceGetCudaComputeCapability(self, handle: _Handle) -> tuple[int, int]:
        """(9, 0), as an H100."""
        self._gpu("nvmlDeviceGetCudaComputeCapability", handle)
        return (9, 0)

    # -- power and energy ---------------------------------------------------

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: _Handle) -> int:
        """Energy counter, millijoules since the driver loaded (or the last reset)."""
        gpu, t_s = self._gpu("nvmlDeviceGetTotalEnergyConsumption", handle)
        if not self._supports_energy:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(gpu.energy_mj(t_s))

    def nvmlDeviceGetPowerUsage(self, handle: _Handle) -> int:
        """Power in milliwatts: the trailing average (1 s on Hopper)."""
        gpu, t_s = self._gpu("nvmlDeviceGetPowerUsage", handle)
        return round(gpu.average_power_w(t_s) * _MW_PER_W)

    def nvmlDeviceGetFieldValues(self, handle: _Handle, fieldIds: Sequence[Any]) -> Any:
        """Field values as an array of pynvml.c_nvmlFieldValue_t; power fields in mW, energy (83) in mJ.

        Each value's timestamp (us since the epoch) is when the driver published it:
        the latest publication for 185/186, the latest counter update for 83, so a
        client polling faster than the sensor sees the same stamp repeat. Other
        fields (or unsupported ones) carry nvmlReturn NOT_SUPPORTED.
        """
        gpu, t_s = self._gpu("nvmlDeviceGetFieldValues", handle)
        values = (pynvml.c_nvmlFieldValue_t * len(fieldIds))()
        wall_offset_s = self._clock.wall() - t_s
        for value, field in zip(values, fieldIds, strict=True):
            field_id, scope_id = field if isinstance(field, tuple) else (field, 0)
            value.fieldId, value.scopeId = field_id, scope_id
            value.timestamp = int((wall_offset_s + t_s) * 1e6)
            if field_id == pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION and self._supports_energy:
                value.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                value.value.ullVal = int(gpu.energy_mj(t_s))
                published_s = gpu.counter_updated_s(t_s)
            elif field_id in _POWER_FIELDS and self._supports_instant_field:
                read = (
                    gpu.instant_power_w
                    if field_id == pynvml.NVML_FI_DEV_POWER_INSTANT
                    else gpu.average_power_w
                )
                value.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
                value.value.uiVal = round(read(t_s) * _MW_PER_W)
                published_s = gpu.published_s(t_s)
            else:
                value.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
                continue
            value.nvmlReturn = pynvml.NVML_SUCCESS
            value.timestamp = round((wall_offset_s + published_s) * 1e6) if self._field_timestamps else 0
        return values

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: _Handle) -> int:
        """Power limit in milliwatts."""
        return round(self._gpu("nvmlDeviceGetEnforcedPowerLimit", handle)[0].power_limit_w * _MW_PER_W)

    def nvmlDeviceGetPowerManagementLimit(self, handle: _Handle) -> int:
        """Power limit in milliwatts."""
        return round(self._gpu("nvmlDeviceGetPowerManagementLimit", handle)[0].power_limit_w * _MW_PER_W)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: _Handle) -> int:
        """Default power limit in milliwatts (the same as the enforced one)."""
        gpu = self._gpu("nvmlDeviceGetPowerManagementDefaultLimit", handle)[0]
        return round(gpu.power_limit_w * _MW_PER_W)

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: _Handle) -> list[int]:
        """[min, max] settable power limit in milliwatts."""
        gpu = self._gpu("nvmlDeviceGetPowerManagementLimitConstraints", handle)[0]
        return [round(gpu.idle_w * 2 * _MW_PER_W), round(gpu.power_limit_w * _MW_PER_W)]

    # -- other metrics ------------------------------------------------------

    def nvmlDeviceGetUtilizationRates(self, handle: _Handle) -> Any:
        """c_nvmlUtilization_t(gpu, memory) in percent."""
        gpu, t_s = self._gpu("nvmlDeviceGetUtilizationRates", handle)
        util = round(gpu.utilisation_pct(t_s))
        return pynvml.c_nvmlUtilization_t(gpu=util, memory=util // 2)

    def nvmlDeviceGetTemperature(self, handle: _Handle, sensor: int) -> int:
        """Temperature in degrees C (only NVML_TEMPERATURE_GPU exists)."""
        gpu, t_s = self._gpu("nvmlDeviceGetTemperature", handle)
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return round(gpu.temperature_c(t_s))

    def nvmlDeviceGetMemoryInfo(self, handle: _Handle, version: int | None = None) -> Any:
        """c_nvmlMemory_t(total, free, used) in bytes."""
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle)[0]
        used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
        return pynvml.c_nvmlMemory_t(total=total, free=total - used, used=used)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: _Handle) -> list[Any]:
        """No processes: the simulated GPUs run no real work."""
        self._gpu("nvmlDeviceGetComputeRunningProcesses", handle)
        return []

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: _Handle) -> list[Any]:
        """No processes."""
        self._gpu("nvmlDeviceGetGraphicsRunningProcesses", handle)
        return []

    def nvmlDeviceGetComputeMode(self, handle: _Handle) -> int:
        """NVML_COMPUTEMODE_DEFAULT."""
        self._gpu("nvmlDeviceGetComputeMode", handle)
        return int(pynvml.NVML_COMPUTEMODE_DEFAULT)


@contextmanager
def install(fake: FakeNvml) -> Iterator[FakeNvml]:
    """Make `import pynvml` return `fake` inside the block; the previous module comes back after."""
    previous = sys.modules.get("pynvml")
    sys.modules["pynvml"] = fake
    try:
        yield fake
    finally:
        if previous is None:
            sys.modules.pop("pynvml", None)
        else:
            sys.modules["pynvml"] = previous
