"""AMD Instinct GPUs through amdsmi (the `amd` extra; imported only here, lazily).

Per GPU, keyed by UUID: the energy counter (amdsmi_get_energy_count: the
accumulator, under "energy_accumulator" since amdsmi 6.2.1 and "power" before,
times `counter_resolution` ~15.26 uJ as a float32) read at the counter's own
pace; the socket power (amdsmi_get_power_info: `socket_power` on ROCm 7,
`current_socket_power` on MI300+, else `average_socket_power`; whole watts,
"N/A" where not reported), activity, VRAM and the power cap (microwatts) at the
slow rate. AMD's "timestamp" is the driver's boot-time clock at each read, new
on every call, so it says nothing of when the accumulator last moved: reads are
paced by the counter's changes instead (`CounterPace`: one observed update
period after a change, every tick while it has not changed), about 10 energy
reads and 4 slow calls per GPU per second at 25 ms (83 when both were read on
every tick). A GPU without a counter has its power read on every tick.

The counter is checked at start-up, as Zeus does: over `check_s` its increase
must lie within 0.1-10x of power x time, else the device is measured by
integrating power instead, labelled `sampled`, with the reason in its note
(ROCm/amdsmi #38: impossible values). A counter refused (NOT_SUPPORTED, e.g. on a
VM guest) also leaves power. A counter that later steps backwards (#115) or jumps
further than the power cap allows is a reset or an implausible step for the
integrator: a counted gap, never negative or terawatt energy.

Indices are HIP's: amdsmi's handle order differs from HIP's, so each handle's HIP
index comes from amdsmi_get_gpu_enumeration_info (ROCm 6.4+); without it
amdsmi's order is used and the device's note says so.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from wattlog.clock import Clock, SystemClock
from wattlog.errors import ConfigError, DeviceLost, NotSupported, SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.publications import CounterPace
from wattlog.telemetry.sensors.base import COUNTER_CHECK, COUNTER_STOPPED, counter_trusted
from wattlog.telemetry.sensors.profiles import board_profile
from wattlog.telemetry.sensors.vendor_library import import_library, start_library
from wattlog.telemetry.types import DeviceInfo, Reading, Vendor

log = logging.getLogger(__name__)

_NOT_SUPPORTED = 2  # AMDSMI_STATUS_NOT_SUPPORTED
_LOST = (31, 34, 51)  # AMDSMI_STATUS_NOT_FOUND, DRIVER_NOT_LOADED, NO_DRV
_POWER_KEYS = ("socket_power", "current_socket_power", "average_socket_power")
# amdsmi_power_info_t: "Unsupported struct members are set to UINT32_MAX" (amdsmi 7.1 docs); Python says "N/A"
_UNSUPPORTED = (0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)


@dataclass
class _Gpu:
    """What the sensor keeps per GPU between reads."""

    handle: Any
    power_key: str | None
    has_counter: bool
    pace: CounterPace = field(default_factory=CounterPace)  # reads paced by the counter's changes
    slow_due_s: float = float("-inf")
    unsupported: set[str] = field(default_factory=set)


class AmdSmiSensor:
    """The AMD backend's Sensor.

    Args:
        amdsmi: The amdsmi module (or a FakeAmdSmi); None imports amdsmi when devices() runs.
        include: (HIP index, uuid, [HIP uuid]) -> whether the GPU is the job's (GpuSelection.includes);
            None measures all of them.
        clock: The sampler's clock (the start-up check sleeps on it).
        slow_period_s: How often activity, VRAM and the power cap are read.
        check_s: How long the start-up counter check watches (0: no check).

    Raises:
        ConfigError: If slow_period_s is not positive or check_s is negative.
    """

    def __init__(
        self,
        amdsmi: Any | None = None,
        include: Callable[[int, str, list[str]], bool] | None = None,
        *,
        clock: Clock | None = None,
        slow_period_s: float = 1.0,
        check_s: float = 1.0,
    ) -> None:
        if not slow_period_s > 0 or check_s < 0:
            raise ConfigError(f"need slow_period_s > 0 and check_s >= 0, got {slow_period_s}, {check_s}")
        self._amdsmi: Any = amdsmi
        self._include = include
        self._clock = clock or getattr(amdsmi, "wattlog_clock", None) or SystemClock()
        self._slow_period_s = slow_period_s
        self._check_s = check_s
        self._started = False
        self._gpus: dict[str, _Gpu] = {}
        self._devices: list[DeviceInfo] | None = None  # once found (the sampler asks again)

    def _start(self) -> Any:
        if self._amdsmi is None:
            self._amdsmi = _import_amdsmi()
        if not self._started:
            start_library(
                self._amdsmi.amdsmi_init,
                self._amdsmi.AmdSmiException,
                lambda e: f"amdsmi could not start ({e}): not measuring AMD GPUs",
            )
            self._started = True
        return self._amdsmi

    def devices(self) -> list[DeviceInfo]:
        """The job's AMD GPUs, each counter checked against power x time (see the module docstring).

        Raises:
            SensorUnavailable: amdsmi is missing or does not start.
        """
        if self._devices is not None:  # the check sleeps: asked again (the sampler does), it is not rerun
            return list(self._devices)
        smi = self._start()
        try:
            handles = list(smi.amdsmi_get_processor_handles())
        except smi.AmdSmiException as e:
            raise SensorUnavailable(f"amdsmi could not list GPUs ({e}): not measuring AMD GPUs") from e
        found: list[tuple[DeviceInfo, list[str]]] = []
        for position, handle in enumerate(handles):
            info = self._identify(smi, position, handle)
            if info is not None:
                found.append(info)
        failed = self._check_counters([device for device, _ in found])
        out = []
        for device, notes in found:
            gpu = self._gpus[device.uuid]
            if device.uuid in failed:
                gpu.has_counter = False
                notes.append(failed[device.uuid])
            source = Source.COUNTER if gpu.has_counter else Source.SAMPLED
            if getattr(smi, "wattlog_simulated", False):
                source, notes = Source.SIMULATED, ["simulated (fake amdsmi)", *notes]
            out.append(_with(device, source, gpu.has_counter, "; ".join(notes)))
        self._devices = out
        return list(out)

    def _identify(self, smi: Any, position: int, handle: Any) -> tuple[DeviceInfo, list[str]] | None:
        """The device of one handle with its notes, or None if it is not the job's or cannot be named."""
        try:
            raw_uuid = str(smi.amdsmi_get_gpu_device_uuid(handle))
            name = str(smi.amdsmi_get_gpu_asic_info(handle).get("market_name", "AMD GPU"))
        except smi.AmdSmiException as e:
            log.warning("skipping AMD GPU %d: amdsmi could not identify it (%s)", position, e)
            return None
        uuid = raw_uuid if raw_uuid.upper().startswith("GPU-") else f"GPU-{raw_uuid}"
        notes: list[str] = []
        index, hip_uuid = self._hip_ids(smi, handle)
        if index is None:
            index = position
            notes.append("HIP index unknown (amdsmi_get_gpu_enumeration_info needs ROCm 6.4): amdsmi order")
        # HIP_VISIBLE_DEVICES names a GPU by HIP's UUID ("GPU-<hex>"), not amdsmi's: both are matched
        other_names = [hip_uuid] if hip_uuid else []
        if self._include is not None and not self._include(index, uuid, other_names):
            return None
        power = self._call(smi, "amdsmi_get_power_info", handle) or {}
        power_key = next((k for k in _POWER_KEYS if _number(power.get(k)) is not None), None)
        notes.append(f"power from amdsmi {power_key} (whole watts)" if power_key else "no power reading")
        counter = self._call(smi, "amdsmi_get_energy_count", handle)
        has_counter = counter is not None and _counts(counter) is not None
        notes.append(
            "energy from amdsmi_get_energy_count"
            if has_counter
            else "energy counter not supported here (e.g. a VM guest): power integrated"
        )
        self._gpus[uuid] = _Gpu(handle, power_key, has_counter)
        cap = self._call(smi, "amdsmi_get_power_cap_info", handle) or {}
        cap_w = cap["power_cap"] / 1e6 if isinstance(cap.get("power_cap"), int | float) else None
        profile = board_profile(Vendor.AMD, name)
        device = DeviceInfo(
            uuid, name, Kind.GPU, Source.COUNTER, has_counter, None, cap_w, index, "", Vendor.AMD, profile
        )
        return device, notes

    def _hip_ids(self, smi: Any, handle: Any) -> tuple[int | None, str]:
        """The handle's HIP index and HIP UUID (ROCm 6.4+); (None, "") where amdsmi cannot say."""
        getter = getattr(smi, "amdsmi_get_gpu_enumeration_info", None)
        if getter is None:
            return None, ""
        try:
            info = getter(handle)
        except smi.AmdSmiException:
            return None, ""
        hip_id, hip_uuid = info.get("hip_id"), info.get("hip_uuid")
        return (hip_id if isinstance(hip_id, int) else None), (hip_uuid if isinstance(hip_uuid, str) else "")

    def _call(self, smi: Any, name: str, handle: Any) -> Any:
        """smi.name(handle), or None if the board refuses it."""
        try:
            return getattr(smi, name)(handle)
        except smi.AmdSmiException as e:
            log.info("amdsmi %s: %s", name, e)
            return None

    def _check_counters(self, devices: list[DeviceInfo]) -> dict[str, str]:
        """Why each counter that fails the start-up check fails it (0.1-10x of power x time)."""
        checked = [d for d in devices if self._gpus[d.uuid].has_counter and self._gpus[d.uuid].power_key]
        if not checked or self._check_s <= 0:
            return {}
        t0 = self._clock.monotonic()
        before = {d.uuid: self._sample(d.uuid) for d in checked}
        self._clock.sleep(self._check_s)
        span_s = self._clock.monotonic() - t0
        failed = {}
        for d in checked:
            (e0, p0), (e1, p1) = before[d.uuid], self._sample(d.uuid)
            expected_j = (p0 + p1) / 2 * span_s
            counted_j = (e1 - e0) / 1e3
            low, high = COUNTER_CHECK
            if not counter_trusted(counted_j, expected_j):
                failed[d.uuid] = (
                    f"energy counter failed the start-up check ({counted_j:.4g} J vs {expected_j:.4g} J "
                    f"from power x {span_s:.2g} s, outside {low:g}-{high:g}x): power integrated instead"
                )
                log.warning("%s: %s", d.uuid, failed[d.uuid])
        return failed

    def _sample(self, uuid: str) -> tuple[float, float]:
        """(counter mJ, power W) now, for the start-up check (a failed read counts as 0)."""
        gpu, smi = self._gpus[uuid], self._amdsmi
        counts = _counts(self._call(smi, "amdsmi_get_energy_count", gpu.handle) or {})
        power = _number((self._call(smi, "amdsmi_get_power_info", gpu.handle) or {}).get(gpu.power_key or ""))
        return counts or 0.0, power or 0.0

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """The counter (paced by its own updates); power, activity, VRAM and the power cap when due.

        Raises:
            DeviceLost: amdsmi no longer finds the GPU.
            SensorError: Another failure; the next read tries again.
        """
        gpu = self._gpus.get(device.uuid)
        if gpu is None:
            raise SensorError(f"{device.uuid} is not one of this sensor's GPUs (call devices() first)")
        smi = self._amdsmi
        energy_mj = power_w = next_read_s = None
        if gpu.has_counter:
            raw = self._metric(device.uuid, gpu, "energy", smi.amdsmi_get_energy_count)
            counts = _counts(raw) if raw is not None else None
            if counts is None:
                raise DeviceLost(device.uuid, COUNTER_STOPPED)
            energy_mj = counts
            next_read_s = gpu.pace.after(energy_mj, t_s)
        slow = t_s >= gpu.slow_due_s
        if gpu.power_key is not None and (slow or not gpu.has_counter):  # a counter's power: at the slow rate
            info = self._metric(device.uuid, gpu, "power", smi.amdsmi_get_power_info) or {}
            power_w = _number(info.get(gpu.power_key))  # "N/A" or UINT32_MAX: no reading
        if not slow:
            return Reading(device.uuid, t_s, energy_mj, power_w, next_read_s=next_read_s)
        gpu.slow_due_s = max(gpu.slow_due_s + self._slow_period_s, t_s)
        activity = self._metric(device.uuid, gpu, "activity", smi.amdsmi_get_gpu_activity) or {}
        vram = self._metric(device.uuid, gpu, "memory", smi.amdsmi_get_gpu_vram_usage) or {}
        cap = self._metric(device.uuid, gpu, "power cap", smi.amdsmi_get_power_cap_info) or {}
        return Reading(
            device.uuid,
            t_s,
            energy_mj,
            power_w,
            utilisation_pct=_number(activity.get("gfx_activity")),
            memory_used_bytes=int(v * 2**20) if (v := _number(vram.get("vram_used"))) is not None else None,
            power_limit_w=c / 1e6 if (c := _number(cap.get("power_cap"))) is not None else None,
            next_read_s=next_read_s,
        )

    def _metric(self, uuid: str, gpu: _Gpu, metric: str, get: Callable[[Any], Any]) -> Any:
        """get(handle), or None once the metric answered NOT_SUPPORTED (not asked again)."""
        if metric in gpu.unsupported:
            return None
        smi = self._amdsmi
        try:
            return get(gpu.handle)
        except smi.AmdSmiLibraryException as e:
            code = e.get_error_code()
            if code == _NOT_SUPPORTED:
                log.info("%s: %s", uuid, NotSupported(metric, uuid))
                gpu.unsupported.add(metric)
                return None
            if code in _LOST:
                raise DeviceLost(uuid, f"amdsmi: {e}") from e
            raise SensorError(f"{uuid}: amdsmi could not read {metric} ({e})") from e

    def close(self) -> None:
        """amdsmi_shut_down, once."""
        if self._started:
            self._started = False
            try:
                self._amdsmi.amdsmi_shut_down()
            except self._amdsmi.AmdSmiException as e:
                log.info("amdsmi_shut_down: %s", e)


def _counts(raw: Any) -> float | None:
    """The counter in mJ from amdsmi_get_energy_count's dict (either key), None if unreadable.

    Its "timestamp" is not used: AMD's is the driver's boot-time clock at the read, new on every
    call whether the accumulator moved or not, so it dates the read, not the counter's update.
    """
    if not isinstance(raw, dict):
        return None
    counts = raw.get("energy_accumulator", raw.get("power"))  # "power" before amdsmi 6.2.1
    resolution = raw.get("counter_resolution")
    if not isinstance(counts, int | float) or not isinstance(resolution, int | float):
        return None
    return counts * resolution / 1e3


def _number(value: Any) -> float | None:
    """A reading amdsmi gave as a number; None for "N/A" and the all-ones "unsupported" values."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value in _UNSUPPORTED:
        return None
    return float(value)


def _with(device: DeviceInfo, source: Source, has_counter: bool, note: str) -> DeviceInfo:
    """`device` with its source, counter flag and note settled after the start-up check."""
    return replace(device, source=source, has_counter=has_counter, note=note)


def _import_amdsmi() -> Any:
    """Import amdsmi with its own prints silenced; a hint that fits why it cannot load.

    Without ROCm, amdsmi prints two lines of its own while failing to import: every command began
    with them, then advised ``pip install wattlog[amd]`` though it was installed (issue 44).

    Raises:
        SensorUnavailable: amdsmi is not installed, or is installed and ROCm's library is missing.
    """
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        # amdsmi raises these without ROCm
        return import_library(
            "amdsmi", (ImportError, OSError, AttributeError, KeyError), _why_amdsmi_is_missing
        )


def _why_amdsmi_is_missing(e: BaseException) -> str:
    """The line for an amdsmi that did not import: not installed, or installed without ROCm."""
    if isinstance(e, ModuleNotFoundError):
        if (e.name or "").split(".", 1)[0] != "amdsmi":
            return f"amdsmi cannot load ({e}): not measuring AMD GPUs"
        return (
            "amdsmi is not installed: pip install 'wattlog[amd]' on a ROCm machine (not measuring AMD GPUs)"
        )
    return (
        f"amdsmi is installed but cannot load ROCm's libamd_smi.so ({e}): install ROCm, or ignore this "
        "on a machine without AMD GPUs (not measuring AMD GPUs)"
    )
