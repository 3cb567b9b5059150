"""NVIDIA GPUs through NVML (nvidia-ml-py, imported as pynvml only here, lazily).

Per GPU, keyed by UUID: the energy counter (nvmlDeviceGetTotalEnergyConsumption,
mJ) where the board has one; power from the field NVML_FI_DEV_POWER_INSTANT
where the driver has it, else nvmlDeviceGetPowerUsage (a 1 s trailing average
on Ampere and newer, except GA100); the DeviceInfo note says which. A metric
that answers NOT_SUPPORTED is remembered per device and not asked again. A GPU
that answers GPU_IS_LOST or UNKNOWN raises DeviceLost, and is not called again
(NVML calls on a faulted GPU can block for tens of seconds), while the other
GPUs go on. Run against :mod:`wattlog.telemetry.sensors.fake_pynvml`, every figure is
labelled `simulated`.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wattlog.errors import DeviceLost, NotSupported, SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.types import DeviceInfo, Reading

log = logging.getLogger(__name__)

# NVML return codes (stable across driver versions) -> wattlog errors. Codes not
# listed become a plain SensorError: the sampler records a gap and goes on.
_ERROR_MAP: dict[int, type[SensorError]] = {
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
_SUCCESS = 0
_NO_DRIVER = (9, 12)
_FI_DEV_POWER_INSTANT = 186  # needs nvidia-ml-py >= 11.525.112 and a driver >= 525
_NVML_TEMPERATURE_GPU = 0
_POWER_INSTANT = "power: NVML_FI_DEV_POWER_INSTANT"
_POWER_AVERAGE = "power: nvmlDeviceGetPowerUsage (1 s average on Ampere+)"
_ENERGY_COUNTER = "energy: nvmlDeviceGetTotalEnergyConsumption"


def _translate(e: Exception, device: str, metric: str) -> SensorError:
    """The wattlog error for an NVMLError raised reading `metric` of `device`."""
    code = getattr(e, "value", None)
    cls = _ERROR_MAP.get(code, SensorError) if isinstance(code, int) else SensorError
    if cls is NotSupported:
        return NotSupported(metric, device)
    if cls is DeviceLost:
        return DeviceLost(device, f"{metric}: {e}")
    if cls is SensorUnavailable:
        return SensorUnavailable(f"NVML stopped answering ({metric} on {device}: {e})")
    return SensorError(f"NVML {metric} on {device} failed: {e}")


@dataclass
class _GpuState:
    """What one GPU offers, learned at devices() and narrowed as reads fail."""

    handle: Any
    has_counter: bool
    instant_field: bool
    unsupported: set[str] = field(default_factory=set)
    lost: str = ""  # the reason, once lost


class NvmlSensor:
    """The NVIDIA backend.

    Args:
        nvml: The pynvml module (or a FakeNvml); None imports pynvml when devices() runs.
        include: (index, uuid) -> whether the GPU is the job's; None measures all of them.
    """

    def __init__(
        self,
        nvml: Any | None = None,
        include: Callable[[int, str], bool] | None = None,
    ) -> None:
        self._nvml: Any = nvml  # a module or a FakeNvml; None until _start imports pynvml
        self._include = include
        self._started = False
        self._devices: list[DeviceInfo] | None = None
        self._state: dict[str, _GpuState] = {}

    # -- lifecycle ----------------------------------------------------------

    def _start(self) -> Any:
        """Import (if needed) and init NVML once; the module."""
        if self._nvml is None:
            try:
                self._nvml = importlib.import_module("pynvml")
            except ImportError as e:
                raise SensorUnavailable(
                    "nvidia-ml-py is not installed: pip install nvidia-ml-py (not measuring GPUs)"
                ) from e
        nvml = self._nvml
        if not self._started:
            try:
                nvml.nvmlInit()
            except nvml.NVMLError as e:
                if getattr(e, "value", None) in _NO_DRIVER:
                    raise SensorUnavailable(
                        "no NVIDIA driver found (libnvidia-ml.so.1 could not be loaded): not measuring GPUs"
                    ) from e
                raise SensorUnavailable(f"NVML could not start ({e}): not measuring GPUs") from e
            self._started = True
        return nvml

    def is_available(self) -> bool:
        """Whether NVML starts here (imports pynvml and inits it; close() releases it)."""
        try:
            self._start()
        except SensorUnavailable:
            return False
        return True

    def close(self) -> None:
        """nvmlShutdown, once, if NVML was started."""
        if self._started:
            self._started = False
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError as e:
                log.debug("nvmlShutdown failed: %s", e)

    # -- discovery ----------------------------------------------------------

    def devices(self) -> list[DeviceInfo]:
        """The job's GPUs, probed once for a counter and the instantaneous power field.

        Raises:
            SensorUnavailable: No driver, no nvidia-ml-py, or NVML failed to start (one line).
        """
        if self._devices is not None:
            return list(self._devices)
        nvml = self._start()
        simulated = bool(getattr(nvml, "WATTLOG_SIMULATED", False))
        found: list[DeviceInfo] = []
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as e:
            raise SensorUnavailable(f"NVML could not count GPUs ({e}): not measuring GPUs") from e
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                uuid = _text(nvml.nvmlDeviceGetUUID(handle))
                if self._include is not None and not self._include(index, uuid):
                    continue
                name = _text(nvml.nvmlDeviceGetName(handle))
            except nvml.NVMLError as e:
                log.warning("skipping GPU %d: NVML could not identify it (%s)", index, e)
                continue
            state = _GpuState(handle, self._probe_counter(handle), self._probe_instant(handle))
            self._state[uuid] = state
            notes = [
                _POWER_INSTANT if state.instant_field else _POWER_AVERAGE,
                _ENERGY_COUNTER if state.has_counter else "no energy counter",
            ]
            source = Source.COUNTER if state.has_counter else Source.SAMPLED
            if simulated:
                source, notes = Source.SIMULATED, ["simulated (fake pynvml)", *notes]
            found.append(
                DeviceInfo(
                    uuid=uuid,
                    name=name,
                    kind=Kind.GPU,
                    source=source,
                    has_counter=state.has_counter,
                    counter_range_mj=None,  # unsigned 64-bit millijoules: never wraps in practice
                    power_limit_w=self._power_limit_w(handle),
                    index=index,
                    note="; ".join(notes),
                )
            )
        self._devices = found
        return list(found)

    def _probe_counter(self, handle: Any) -> bool:
        try:
            self._nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except self._nvml.NVMLError:
            return False
        return True

    def _probe_instant(self, handle: Any) -> bool:
        try:
            values = self._nvml.nvmlDeviceGetFieldValues(handle, [_FI_DEV_POWER_INSTANT])
        except (self._nvml.NVMLError, AttributeError):  # old bindings lack the function
            return False
        return int(values[0].nvmlReturn) == _SUCCESS

    def _power_limit_w(self, handle: Any) -> float | None:
        try:
            return float(self._nvml.nvmlDeviceGetEnforcedPowerLimit(handle)) / 1e3
        except self._nvml.NVMLError:
            return None

    # -- reading ------------------------------------------------------------

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """Counter, power, utilisation, temperature and memory of `device`.

        Raises:
            DeviceLost: The GPU answered GPU_IS_LOST or UNKNOWN (now or before).
            SensorError: Another failure; the next read tries again.
        """
        state = self._state.get(device.uuid)
        if state is None:
            raise SensorError(f"{device.uuid} is not one of this sensor's GPUs (call devices() first)")
        if state.lost:
            raise DeviceLost(device.uuid, state.lost)
        try:
            return Reading(
                device=device.uuid,
                t_s=t_s,
                energy_mj=self._energy_mj(device.uuid, state),
                power_w=self._power_w(device.uuid, state),
                utilisation_pct=self._metric(device.uuid, state, "utilisation", _utilisation),
                temperature_c=self._metric(device.uuid, state, "temperature", _temperature),
                memory_used_bytes=self._metric(device.uuid, state, "memory", _memory_used),
            )
        except DeviceLost as e:
            state.lost = e.reason
            raise

    def _metric(self, uuid: str, state: _GpuState, metric: str, get: Callable[[Any, Any], Any]) -> Any:
        """get(nvml, handle), or None once the metric answered NOT_SUPPORTED."""
        if metric in state.unsupported:
            return None
        try:
            return get(self._nvml, state.handle)
        except self._nvml.NVMLError as e:
            error = _translate(e, uuid, metric)
            if isinstance(error, NotSupported):
                log.info("%s: %s not supported, not asking again", uuid, metric)
                state.unsupported.add(metric)
                return None
            raise error from e

    def _energy_mj(self, uuid: str, state: _GpuState) -> float | None:
        if not state.has_counter:
            return None
        value = self._metric(uuid, state, "energy", _energy)
        if value is None:  # it answered at devices() but not now: stop asking
            state.has_counter = False
        return value

    def _power_w(self, uuid: str, state: _GpuState) -> float | None:
        if state.instant_field:
            try:
                field_value = self._nvml.nvmlDeviceGetFieldValues(state.handle, [_FI_DEV_POWER_INSTANT])[0]
            except self._nvml.NVMLError as e:
                raise _translate(e, uuid, "power") from e
            code = int(field_value.nvmlReturn)
            if code == _SUCCESS:
                return float(field_value.value.uiVal) / 1e3
            error = _translate(self._nvml.NVMLError(code), uuid, "power")
            if not isinstance(error, NotSupported):
                raise error
            log.info("%s: NVML_FI_DEV_POWER_INSTANT stopped answering, using nvmlDeviceGetPowerUsage", uuid)
            state.instant_field = False
        return self._metric(uuid, state, "power", _power_usage)


def _text(value: str | bytes) -> str:
    """Old bindings return bytes, new ones str."""
    return value.decode() if isinstance(value, bytes) else value


def _energy(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))


def _power_usage(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetPowerUsage(handle)) / 1e3


def _utilisation(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)


def _temperature(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetTemperature(handle, _NVML_TEMPERATURE_GPU))


def _memory_used(nvml: Any, handle: Any) -> int:
    return int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
