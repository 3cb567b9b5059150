"""The Intel Gaudi backend: HABANA_VISIBLE_MODULES and an HLML sensor (pyhlml, imported only here, lazily).

Per device, keyed by UUID: the driver's energy counter (hlmlDeviceGetTotalEnergyConsumption,
mJ since the driver loaded) and the power (hlmlDeviceGetPowerUsage, mW) on every read;
utilisation and memory at the slow rate; the default power limit (mW) once. A
device whose counter answers NOT_SUPPORTED is measured by integrating power,
labelled `sampled`. HABANA_VISIBLE_MODULES lists module ids (hlmlDeviceGetModuleID),
not HLML indices, so the module id is what the selection matches. Board families'
profiles are in gaudi.toml. Where pyhlml does not load, the backend falls back on
hl-smi's CSV once a second (sensors/hlsmi.py: power only, labelled `sampled`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wattlog.clock import Clock, SystemClock
from wattlog.errors import ConfigError, DeviceLost, SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.selection import GAUDI_VISIBILITY, GpuSelection
from wattlog.telemetry.sensors.base import COUNTER_STOPPED, ProbeOptions, RuleVisibility, Sensor
from wattlog.telemetry.sensors.hlsmi import HlSmiSensor
from wattlog.telemetry.sensors.profiles import board_profile
from wattlog.telemetry.sensors.vendor_library import import_library, start_library
from wattlog.telemetry.types import DeviceInfo, Reading, Vendor

log = logging.getLogger(__name__)

_NOT_SUPPORTED = 3  # HLML_ERROR_NOT_SUPPORTED
_LOST = 15  # HLML_ERROR_GPU_IS_LOST


@dataclass
class _Device:
    handle: Any
    has_counter: bool
    slow_due_s: float = float("-inf")
    unsupported: set[str] = field(default_factory=set)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class HlmlSensor:
    """Gaudi devices through HLML.

    Args:
        hlml: The pyhlml module (or a FakeHlml); None imports pyhlml when devices() runs.
        include: (module id, uuid) -> whether the device is the job's; None measures all of them.
        clock: The sampler's clock.
        slow_period_s: How often utilisation and memory are read.
    """

    def __init__(
        self,
        hlml: Any | None = None,
        include: Callable[[int, str], bool] | None = None,
        *,
        clock: Clock | None = None,
        slow_period_s: float = 1.0,
    ) -> None:
        if not slow_period_s > 0:
            raise ConfigError(f"slow_period_s must be > 0, got {slow_period_s}")
        self._hlml: Any = hlml
        self._include = include
        self._clock = clock or getattr(hlml, "wattlog_clock", None) or SystemClock()
        self._slow_period_s = slow_period_s
        self._started = False
        self._devices: dict[str, _Device] = {}

    def _start(self) -> Any:
        if self._hlml is None:
            self._hlml = import_library(
                "pyhlml",
                (ImportError, OSError),
                lambda e: (
                    f"pyhlml cannot load ({e}): install it from the Gaudi software stack "
                    "(not measuring Gaudi)"
                ),
            )
        if not self._started:
            start_library(
                self._hlml.hlmlInit,
                self._hlml.HLMLError,
                lambda e: f"HLML could not start ({e}): not measuring Gaudi",
            )
            self._started = True
        return self._hlml

    def devices(self) -> list[DeviceInfo]:
        """The job's Gaudi devices, each probed once for the energy counter.

        Raises:
            SensorUnavailable: pyhlml is missing or HLML does not start.
        """
        hlml = self._start()
        found = []
        for index in range(hlml.hlmlDeviceGetCount()):
            try:
                handle = hlml.hlmlDeviceGetHandleByIndex(index)
                uuid, name = _text(hlml.hlmlDeviceGetUUID(handle)), _text(hlml.hlmlDeviceGetName(handle))
                module = int(hlml.hlmlDeviceGetModuleID(handle))
            except hlml.HLMLError as e:
                log.warning("skipping Gaudi %d: HLML could not identify it (%s)", index, e)
                continue
            if self._include is not None and not self._include(module, uuid):
                continue
            device = _Device(
                handle, has_counter=self._answers(hlml.hlmlDeviceGetTotalEnergyConsumption, handle)
            )
            self._devices[uuid] = device
            limit = self._answers(hlml.hlmlDeviceGetPowerManagementDefaultLimit, handle, value=True)
            notes = ["power from hlmlDeviceGetPowerUsage (mW)"]
            notes.append(
                "energy from hlmlDeviceGetTotalEnergyConsumption (mJ since the driver loaded)"
                if device.has_counter
                else "no energy counter (not supported here): power integrated"
            )
            source = Source.COUNTER if device.has_counter else Source.SAMPLED
            if getattr(hlml, "wattlog_simulated", False):
                source, notes = Source.SIMULATED, ["simulated (fake pyhlml)", *notes]
            found.append(
                DeviceInfo(
                    uuid,
                    name,
                    Kind.GPU,
                    source,
                    device.has_counter,
                    power_limit_w=limit / 1e3 if isinstance(limit, int | float) else None,
                    index=module,
                    note="; ".join(notes),
                    vendor=Vendor.HABANA,
                    profile=board_profile(Vendor.HABANA, name),
                )
            )
        return found

    def _answers(self, get: Callable[[Any], Any], handle: Any, *, value: bool = False) -> Any:
        """Whether get(handle) answers (or its value, with value=True; None if it does not)."""
        try:
            result = get(handle)
        except self._hlml.HLMLError:
            return None if value else False
        return result if value else True

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """Counter and power of `device`; utilisation and memory when due.

        Raises:
            DeviceLost: HLML reports the device lost.
            SensorError: Another failure; the next read tries again.
        """
        state = self._devices.get(device.uuid)
        if state is None:
            raise SensorError(f"{device.uuid} is not one of this sensor's devices (call devices() first)")
        hlml = self._hlml
        energy = self._metric(device.uuid, state, "energy", hlml.hlmlDeviceGetTotalEnergyConsumption)
        power_mw = self._metric(device.uuid, state, "power", hlml.hlmlDeviceGetPowerUsage)
        if state.has_counter and energy is None:  # stopped mid-run: a gap, never a silent stall
            raise DeviceLost(device.uuid, COUNTER_STOPPED)
        energy_mj = float(energy) if energy is not None else None
        power_w = power_mw / 1e3 if power_mw is not None else None
        if t_s < state.slow_due_s:
            return Reading(device.uuid, t_s, energy_mj, power_w)
        state.slow_due_s = max(state.slow_due_s + self._slow_period_s, t_s)
        utilisation = self._metric(device.uuid, state, "utilisation", hlml.hlmlDeviceGetUtilizationRates)
        memory = self._metric(device.uuid, state, "memory", hlml.hlmlDeviceGetMemoryInfo)
        return Reading(
            device.uuid,
            t_s,
            energy_mj,
            power_w,
            utilisation_pct=float(utilisation) if utilisation is not None else None,
            memory_used_bytes=int(memory.used) if memory is not None else None,
        )

    def _metric(self, uuid: str, state: _Device, metric: str, get: Callable[[Any], Any]) -> Any:
        """get(handle), or None once the metric answered NOT_SUPPORTED (not asked again)."""
        if metric in state.unsupported or (metric == "energy" and not state.has_counter):
            return None
        try:
            return get(state.handle)
        except self._hlml.HLMLError as e:
            code = getattr(e, "value", None)
            if code == _NOT_SUPPORTED:
                log.info("%s: %s not supported, not asking again", uuid, metric)
                state.unsupported.add(metric)
                return None
            if code == _LOST:
                raise DeviceLost(uuid, f"HLML: {e}") from e
            raise SensorError(f"{uuid}: HLML could not read {metric} ({e})") from e

    def close(self) -> None:
        """hlmlShutdown, once."""
        if self._started:
            self._started = False
            try:
                self._hlml.hlmlShutdown()
            except self._hlml.HLMLError as e:
                log.info("hlmlShutdown: %s", e)


class GaudiBackend(RuleVisibility):
    """Intel Gaudi devices through HLML, else hl-smi's CSV (sensors/hlsmi.py) where pyhlml does not load.

    Args:
        hlml: A pyhlml-compatible module (tests); else `ProbeOptions.modules["pyhlml"]`, else pyhlml.
        hl_smi: The hl-smi command to fall back on (None: no fallback).
    """

    vendor = Vendor.HABANA
    rules = GAUDI_VISIBILITY  # HABANA_VISIBLE_MODULES (module ids), else SLURM's binding

    def __init__(self, hlml: Any | None = None, *, hl_smi: Sequence[str] | None = ("hl-smi",)) -> None:
        self._hlml = hlml
        self._hl_smi = hl_smi

    def probe(self, selection: GpuSelection, options: ProbeOptions) -> Sensor | str:
        """An HlmlSensor over the selected devices (else an HlSmiSensor), or why there is none."""
        hlml = self._hlml if self._hlml is not None else options.modules.get("pyhlml")
        sensor: Sensor = HlmlSensor(
            hlml, selection.includes, clock=options.clock, slow_period_s=options.slow_period_s
        )
        why = ""
        try:
            devices = sensor.devices()
        except SensorUnavailable as error:  # no pyhlml or no HLML: hl-smi may still answer
            sensor.close()
            if self._hl_smi is None:
                return str(error)
            why = f"{error}; "
            sensor = HlSmiSensor(selection.includes, clock=options.clock, command=self._hl_smi)
            try:
                devices = sensor.devices()
            except SensorError as fallback:
                return f"{why}{fallback}"
        except SensorError as error:
            sensor.close()
            return str(error)
        if devices:
            return sensor
        sensor.close()
        if selection.selects_all:
            return f"{why}no Gaudi device listed"
        return f"{why}no device of this job ({selection.origin})"
