"""NVIDIA GPUs through NVML (nvidia-ml-py, imported as pynvml only here, lazily).

Per GPU, keyed by UUID, the hot path is ONE NVML call per tick:
nvmlDeviceGetFieldValues with the instantaneous power (field 186,
NVML_FI_DEV_POWER_INSTANT) and the total energy (field 83,
NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ) together. NVML calls serialise in the
driver (MangoHud PR 2104: polling every metric every 25 ms held the driver's
lock ~10 s of every 15 s), so utilisation, temperature, memory and the power
limit are read only every `slow_period_s` (1 s). Each field value carries the
driver's timestamp of its publication; it is handed on (on the sampler's
monotonic clock) so the integrator counts repeated publications and
integrates on the driver's own times. From those times each field's
publication period is learned, and each reading says when the next one is due
(`next_read_s`): the sampler skips the GPU until then, so a GPU that publishes
every 100 ms is read ~10 times a second, not 40 (`paced=False` reads every
tick). Where a field is missing the plain call
takes its place, per field and per GPU: nvmlDeviceGetTotalEnergyConsumption,
or nvmlDeviceGetPowerUsage (a 1 s trailing average on Ampere and newer, except
GA100); the DeviceInfo note says which. A metric that answers NOT_SUPPORTED is
remembered per device and not asked again; an energy counter that stops
answering after devices() found it marks the GPU lost (an open gap), since its
energy comes from the counter alone. A GPU that answers GPU_IS_LOST or
UNKNOWN raises DeviceLost, and is not called again (NVML calls on a faulted GPU
can block for tens of seconds), while the other GPUs go on. Run against
:mod:`wattlog.telemetry.sensors.fake_pynvml`, every figure is labelled `simulated`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from wattlog.clock import Clock, SystemClock
from wattlog.errors import ConfigError, DeviceLost, NotSupported, SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.sensors.base import COUNTER_STOPPED
from wattlog.telemetry.sensors.nvml_fields import (
    FI_DEV_POWER_INSTANT,
    FI_DEV_TOTAL_ENERGY_CONSUMPTION,
    FIELDS_UNREADABLE,
    MIG_NOTE,
    NO_DRIVER,
    PACE_MARGIN_S,
    PROFILES,
    STAMP_MAX_AGE_S,
    STAMP_MAX_AHEAD_S,
    SUCCESS,
    GpuState,
    energy,
    memory_used,
    mig_instances,
    power_limit,
    power_usage,
    temperature,
    text,
    translate,
    unpack,
    utilisation,
)
from wattlog.telemetry.sensors.profiles import load_table
from wattlog.telemetry.sensors.vendor_library import import_library, start_library
from wattlog.telemetry.types import DeviceInfo, Reading, Vendor

log = logging.getLogger(__name__)


class NvmlSensor:
    """The NVIDIA backend.

    Args:
        nvml: The pynvml module (or a FakeNvml); None imports pynvml when devices() runs.
        include: (index, uuid[, mig_uuids]) -> whether the GPU is the job's (GpuSelection.includes;
            the GPU's MIG instance UUIDs are passed when it has some); None measures all of them.
        clock: The sampler's clock (field timestamps are wall time; readings are on its monotonic time).
        slow_period_s: How often utilisation, temperature, memory and the power limit are read.
        paced: Tell the sampler when each GPU's next publication is due (``Reading.next_read_s``),
            so a GPU is read once per publication (~10 Hz on A100/H100), not on every 25 ms tick.

    Raises:
        ConfigError: If slow_period_s is not positive.
    """

    def __init__(
        self,
        nvml: Any | None = None,
        include: Callable[..., bool] | None = None,
        *,
        clock: Clock | None = None,
        slow_period_s: float = 1.0,
        paced: bool = True,
    ) -> None:
        if not slow_period_s > 0:
            raise ConfigError(f"slow_period_s must be > 0, got {slow_period_s}; the default is 1.0")
        self._nvml: Any = nvml  # a module or a FakeNvml; None until _start imports pynvml
        self._include = include
        # a fake NVML stamps its fields from its own clock: read them on that clock
        self._clock = clock or getattr(nvml, "wattlog_clock", None) or SystemClock()
        self._slow_period_s = slow_period_s
        self._paced = paced
        self._wall_offset_s = 0.0
        self._started = False
        self._devices: list[DeviceInfo] | None = None
        self._state: dict[str, GpuState] = {}

    # -- lifecycle ----------------------------------------------------------

    def _start(self) -> Any:
        """Import (if needed) and init NVML once; the module."""
        if self._nvml is None:
            self._nvml = import_library(
                "pynvml",
                (ImportError,),
                lambda _: "nvidia-ml-py is not installed: pip install nvidia-ml-py (not measuring GPUs)",
            )
        nvml = self._nvml
        if not self._started:
            start_library(nvml.nvmlInit, nvml.NVMLError, _nvml_failed)
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
        self._wall_offset_s = self._clock.wall() - self._clock.monotonic()
        simulated = bool(getattr(nvml, "WATTLOG_SIMULATED", False))
        found: list[DeviceInfo] = []
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as e:
            raise SensorUnavailable(f"NVML could not count GPUs ({e}): not measuring GPUs") from e
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                uuid = text(nvml.nvmlDeviceGetUUID(handle))
                migs = mig_instances(nvml, handle)
                chosen = self._include is None or (
                    self._include(index, uuid, migs) if migs else self._include(index, uuid)
                )
                if not chosen:
                    continue
                name = text(nvml.nvmlDeviceGetName(handle))
            except nvml.NVMLError as e:
                log.warning("skipping GPU %d: NVML could not identify it (%s)", index, e)
                continue
            state = self._probe(handle)
            self._state[uuid] = state
            notes = [*state.notes(), *([MIG_NOTE.format(n=len(migs))] if migs is not None else [])]
            source = Source.COUNTER if state.has_counter else Source.SAMPLED
            profile = load_table(PROFILES).for_board(name)
            if simulated:
                source, notes = Source.SIMULATED, ["simulated (fake pynvml)", *notes]
            found.append(
                DeviceInfo(
                    uuid=uuid,
                    name=name,
                    kind=Kind.GPU,
                    source=source,
                    has_counter=state.has_counter,
                    counter_range_mj=profile.counter_range_mj,
                    power_limit_w=self._power_limit_w(handle),
                    index=index,
                    note="; ".join(notes),
                    vendor=Vendor.NVIDIA,
                    profile=profile,
                )
            )
        self._devices = found
        return list(found)

    def _probe(self, handle: Any) -> GpuState:
        """Which of the two fields answer, and whether a counter exists by either road."""
        wanted = [FI_DEV_POWER_INSTANT, FI_DEV_TOTAL_ENERGY_CONSUMPTION]
        unreadable = ""
        try:
            values = self._nvml.nvmlDeviceGetFieldValues(handle, wanted)
            answered = [field_id for field_id, code, _, _ in unpack(values) if code == SUCCESS]
        except self._nvml.NVMLError:
            answered = []  # the driver refuses the fields: the plain calls then
        except Exception as e:  # noqa: BLE001 - any binding quirk (an old one lacking the function, an
            # array laid out otherwise than nvml.h, a Python sequence) must fall back, never stop the agent
            answered, unreadable = [], FIELDS_UNREADABLE.format(error=type(e).__name__)
        fields = [f for f in wanted if f in answered]
        energy_field = FI_DEV_TOTAL_ENERGY_CONSUMPTION in fields
        return GpuState(
            handle,
            has_counter=energy_field or self._probe_counter(handle),
            instant_field=FI_DEV_POWER_INSTANT in fields,
            energy_field=energy_field,
            fields=fields,
            fallback_note=unreadable,
        )

    def _probe_counter(self, handle: Any) -> bool:
        try:
            self._nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except self._nvml.NVMLError:
            return False
        return True

    def _power_limit_w(self, handle: Any) -> float | None:
        try:
            return float(self._nvml.nvmlDeviceGetEnforcedPowerLimit(handle)) / 1e3
        except self._nvml.NVMLError:
            return None

    # -- reading ------------------------------------------------------------

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """Counter and power of `device` in one NVML call; the slow metrics when due (every slow_period_s).

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
            return self._read(device.uuid, state, t_s)
        except DeviceLost as e:
            state.lost = e.reason
            raise

    def _read(self, uuid: str, state: GpuState, t_s: float) -> Reading:
        energy_mj = power_w = energy_t = power_t = None
        if state.fields:
            energy_mj, energy_t, power_w, power_t = self._fields(uuid, state, t_s)
        if state.has_counter and not state.energy_field:
            energy_mj = self._metric(uuid, state, "energy", energy)
            if energy_mj is None:  # it answered at devices() but not now: a gap, never a silent stall
                raise DeviceLost(uuid, COUNTER_STOPPED)
        if not state.instant_field:
            power_w = self._metric(uuid, state, "power", power_usage)
        # Every hot-path value is field-timed: nothing new can show before the next publication of
        # either field, so the sampler may wait until then (slow metrics come with the read after due).
        field_timed = state.instant_field and (state.energy_field or not state.has_counter)
        next_read_s = state.next_read_s if field_timed else None
        if self._paced and energy_mj is not None and (energy_t is None or not field_timed):
            next_read_s = state.paced_by_counter(energy_mj, t_s)  # no driver times: the counter paces
        if t_s < state.slow_due_s:
            return Reading(
                uuid, t_s, energy_mj, power_w, energy_t_s=energy_t, power_t_s=power_t, next_read_s=next_read_s
            )
        # Slow metrics: their own deadline grid, skipping ahead after a stall (never a burst).
        due_s = state.slow_due_s + self._slow_period_s
        state.slow_due_s = due_s if due_s > t_s else t_s + self._slow_period_s
        self._wall_offset_s = self._clock.wall() - self._clock.monotonic()  # follows NTP slew
        return Reading(
            uuid,
            t_s,
            energy_mj,
            power_w,
            utilisation_pct=self._metric(uuid, state, "utilisation", utilisation),
            temperature_c=self._metric(uuid, state, "temperature", temperature),
            memory_used_bytes=self._metric(uuid, state, "memory", memory_used),
            energy_t_s=energy_t,
            power_t_s=power_t,
            power_limit_w=self._metric(uuid, state, "power limit", power_limit),
            next_read_s=next_read_s,
        )

    def _fields(
        self, uuid: str, state: GpuState, t_s: float
    ) -> tuple[float | None, float | None, float | None, float | None]:
        """(energy_mj, its driver time, power_w, its driver time) from one nvmlDeviceGetFieldValues call."""
        try:
            values = self._nvml.nvmlDeviceGetFieldValues(state.handle, state.fields)
        except self._nvml.NVMLError as e:
            raise translate(e, uuid, "power and energy fields") from e
        energy_mj = energy_t = power_w = power_t = None
        for field_id, code, stamp_us, value in unpack(values):
            if code != SUCCESS:
                self._field_failed(uuid, state, field_id, code)
            elif field_id == FI_DEV_POWER_INSTANT:
                power_w = value / 1e3
                power_t = self._driver_time(state, 0, stamp_us, t_s)
            else:
                energy_mj = value
                energy_t = self._driver_time(state, 1, stamp_us, t_s)
        state.next_read_s = self._next_publication_s(state, power_t, energy_t)
        return energy_mj, energy_t, power_w, power_t

    def _next_publication_s(
        self, state: GpuState, power_t: float | None, energy_t: float | None
    ) -> float | None:
        """When the earlier of the two fields' next publications is due; None if either is untimed."""
        if not self._paced:
            return None
        due: list[float] = []
        for slot, t, wanted in ((0, power_t, state.instant_field), (1, energy_t, state.energy_field)):
            if not wanted:
                continue
            period_s = state.periods[slot].period_s
            if t is None or period_s is None:
                return None
            due.append(t + period_s + PACE_MARGIN_S)
        return min(due) if due else None

    def _driver_time(self, state: GpuState, slot: int, stamp_us: int, t_s: float) -> float | None:
        """A field's timestamp (us since the epoch) on the sampler's monotonic clock; None if absent.

        The same publication read again keeps exactly the same time (the raw stamp is
        compared, not the converted one), so the integrator counts it as a repeat.
        """
        if stamp_us <= 0:
            return None
        last_us, last_t = state.stamps[slot]
        if stamp_us == last_us:
            return last_t
        t = stamp_us / 1e6 - self._wall_offset_s
        if not t_s - STAMP_MAX_AGE_S <= t <= t_s + STAMP_MAX_AHEAD_S:
            if not state.bad_stamps:
                log.info(
                    "NVML field timestamps are %.3f s off this clock: integrating on read times", t - t_s
                )
            state.bad_stamps = True
            return None
        t = min(t, t_s)  # a driver a little ahead of us: now
        state.stamps[slot] = (stamp_us, t)
        if last_us > 0 and stamp_us > last_us:
            state.periods[slot].add((stamp_us - last_us) / 1e6)
        return t

    def _field_failed(self, uuid: str, state: GpuState, field_id: int, code: int) -> None:
        """A field answered an error: fall back to the plain call for NOT_SUPPORTED, raise otherwise."""
        metric = "power" if field_id == FI_DEV_POWER_INSTANT else "energy"
        error = translate(self._nvml.NVMLError(code), uuid, metric)
        if not isinstance(error, NotSupported):
            raise error
        state.fields = [f for f in state.fields if f != field_id]
        if field_id == FI_DEV_POWER_INSTANT:
            log.info("%s: NVML_FI_DEV_POWER_INSTANT stopped answering, using nvmlDeviceGetPowerUsage", uuid)
            state.instant_field = False
        else:
            log.info(
                "%s: the energy field stopped answering, using nvmlDeviceGetTotalEnergyConsumption", uuid
            )
            state.energy_field = False

    def _metric(self, uuid: str, state: GpuState, metric: str, get: Callable[[Any, Any], Any]) -> Any:
        """get(nvml, handle), or None once the metric answered NOT_SUPPORTED."""
        if metric in state.unsupported:
            return None
        try:
            return get(self._nvml, state.handle)
        except self._nvml.NVMLError as e:
            error = translate(e, uuid, metric)
            if isinstance(error, NotSupported):
                log.info("%s: %s not supported, not asking again", uuid, metric)
                state.unsupported.add(metric)
                return None
            raise error from e


def _nvml_failed(error: BaseException) -> str:
    """The line for an nvmlInit that raised: no driver at all, or another NVML error."""
    if getattr(error, "value", None) in NO_DRIVER:
        return "no NVIDIA driver found (libnvidia-ml.so.1 could not be loaded): not measuring GPUs"
    return f"NVML could not start ({error}): not measuring GPUs"
