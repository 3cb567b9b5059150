"""Pick the sensors this machine has: each registered vendor's GPUs, RAPL for CPU and DRAM, else the estimate.

Accelerators come from the vendor backends in GPU_BACKENDS (NVIDIA, AMD, Gaudi), each
probed with the job's selection by its own visibility rules; the host backends
(RAPL powercap, then the CPU/DRAM estimate for what RAPL does not measure)
follow, then the node's BMC (Redfish or IPMI DCMI: the node boundary, whose meter
counts the node, its parts shown apart). A function, not a global: the caller (the
agent, `wattlog sensors`) composes what it returns. Every backend that is not used leaves one line
saying why, so "no NVIDIA driver" is a note on screen, never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattlog.clock import Clock
from wattlog.errors import SensorError
from wattlog.plugins import EntryPoints, Loaded, installed_entry_points, load_group
from wattlog.records import Kind
from wattlog.telemetry.selection import GpuSelection
from wattlog.telemetry.sensors.amd import AmdBackend
from wattlog.telemetry.sensors.base import Backend, ProbeOptions, Sensor
from wattlog.telemetry.sensors.bmc import BmcConfig, check_config
from wattlog.telemetry.sensors.dcmi import DcmiNodeSensor
from wattlog.telemetry.sensors.estimate import EstimateConfig, EstimateSensor
from wattlog.telemetry.sensors.gaudi import GaudiBackend
from wattlog.telemetry.sensors.hwmon_power import HwmonPowerSensor, hwmon_root
from wattlog.telemetry.sensors.nvidia import NvidiaBackend
from wattlog.telemetry.sensors.offthread import OffThreadSensor
from wattlog.telemetry.sensors.powercap import PowercapSensor
from wattlog.telemetry.sensors.redfish_node import RedfishNodeSensor
from wattlog.telemetry.types import DeviceInfo

_HOST_KINDS = (Kind.CPU, Kind.DRAM)

GPU_BACKENDS: tuple[Callable[[], Backend], ...] = (NvidiaBackend, AmdBackend, GaudiBackend)
"""The registered vendor backends, in the order discovery probes them (a UUID is measured once)."""

SENSORS_GROUP = "wattlog.sensors"
"""The entry-point group of vendor backends: each names a callable that returns a Backend."""

BUILT_IN_BACKENDS = {
    "nvidia": "wattlog.telemetry.sensors.nvidia:NvidiaBackend",
    "amd": "wattlog.telemetry.sensors.amd:AmdBackend",
    "gaudi": "wattlog.telemetry.sensors.gaudi:GaudiBackend",
}
"""GPU_BACKENDS as pyproject.toml registers them in SENSORS_GROUP (the same order)."""


def vendor_backends(entry_points: EntryPoints = installed_entry_points) -> Loaded:
    """The vendor backends: the built-ins, then those installed packages register, by name."""
    return load_group(SENSORS_GROUP, BUILT_IN_BACKENDS, entry_points)


@dataclass(frozen=True, slots=True)
class Discovery:
    """What was found: the sensors to sample, their devices, and why others were left out.

    Attributes:
        sensors: Sensors with at least one device, in discovery order.
        devices: (sensor, device) for every device to sample, each UUID once.
        notes: One line per backend not used (or used only in part) and why.
        selection: Which GPUs of the node belong to the job.
        backends: One line per vendor backend probed: its vendor and who registered it.
    """

    sensors: tuple[Sensor, ...]
    devices: tuple[tuple[Sensor, DeviceInfo], ...]
    notes: tuple[str, ...]
    selection: GpuSelection
    backends: tuple[str, ...] = ()

    def close(self) -> None:
        """Close every sensor (nvmlShutdown and the like)."""
        for sensor in self.sensors:
            sensor.close()


@dataclass
class DiscoveryConfig:
    """What `discover` probes, and with what (every field has a default: the real machine)."""

    selection: GpuSelection | None = None
    """The job's GPUs, for every vendor (default: each backend's own visibility rules read from `environ`)."""
    nvml: Any | None = None
    """A pynvml-compatible module (default: the real one; tests pass the simulated one)."""
    powercap_root: Path = Path("/sys/class/powercap")
    """The powercap tree to read RAPL from."""
    estimate: EstimateConfig | None = None
    """Constants of the CPU/DRAM estimate (default EstimateConfig()); it covers only the kinds RAPL
    does not measure, and not at all when disabled."""
    extra: Sequence[Sensor] = ()
    """More sensors to include as they are, e.g. simulated GPUs."""
    clock: Clock | None = None
    """The sampler's clock (NVML field timestamps are put on it)."""
    slow_period_s: float = 1.0
    """How often slow metrics (GPU utilisation, temperature, memory, power limit; the CPU estimate's
    utilisation) are read."""
    backends: Sequence[Backend] | None = None
    """The vendor backends to probe (default: one of each in GPU_BACKENDS, then the plugins')."""
    entry_points: EntryPoints = installed_entry_points
    """Where the plugins' backends are found (default: the installed packages' metadata)."""
    environ: Mapping[str, str] | None = None
    """The environment visibility is read from (default: this process's)."""
    hwmon_root: Path | None = None
    """The hwmon tree Grace's ACPI power meters are read from (CPUs without RAPL); default:
    $WATTLOG_HWMON_ROOT in `environ`, else /sys/class/hwmon."""
    bmc: BmcConfig | None = None
    """The node's BMC, the node boundary (default: read from `environ`, see telemetry.sensors.bmc;
    nothing set there: no BMC is probed)."""


def discover(config: DiscoveryConfig | None = None) -> Discovery:
    """Probe every backend and keep those that answer.

    Args:
        config: What to probe and with what (default: this machine, as the environment says).

    Returns:
        The sensors, their devices and the notes on what was not used.
    """
    c = config or DiscoveryConfig()
    selection, slow_period_s = c.selection, c.slow_period_s
    options = ProbeOptions(c.clock, slow_period_s, {"pynvml": c.nvml} if c.nvml is not None else {})
    found = _Found()
    backends = _backends(c, found)
    selections = [
        _probe_vendor(found, backend, selection, options, os.environ if c.environ is None else c.environ)
        for backend, _ in backends
    ]
    environ = os.environ if c.environ is None else c.environ
    roots = (c.powercap_root, hwmon_root(environ, c.hwmon_root))
    _probe_host(found, roots, c.estimate or EstimateConfig(), slow_period_s)
    _probe_node(found, check_config(c.bmc or BmcConfig.from_environ(environ)))
    for sensor in c.extra:
        found.probe(type(sensor).__name__, sensor)
    # the selection line is that of the first vendor whose devices are measured (an AMD node's says HIP's)
    used = [chosen for chosen, found_some in selections if found_some] or [chosen for chosen, _ in selections]
    shown = selection or (used[0] if used else GpuSelection(False, None, None, "no GPU backend"))
    listed = tuple(f"{backend.vendor.label} ({origin})" for backend, origin in backends)
    return Discovery(tuple(found.sensors), tuple(found.devices), tuple(found.notes), shown, listed)


def _backends(c: DiscoveryConfig, found: _Found) -> list[tuple[Backend, str]]:
    """The backends to probe with who registered each; a plugin that fails is a note."""
    if c.backends is not None:
        return [(backend, "given") for backend in c.backends]
    backends: list[tuple[Backend, str]] = [(make(), "built-in") for make in GPU_BACKENDS]
    loaded = vendor_backends(c.entry_points)
    found.notes.extend(loaded.failures)
    for plugin in loaded.brought():
        try:
            backend = plugin.loaded()
        except Exception as e:  # a plugin's fault is a note, never the agent's end
            found.notes.append(f"{SENSORS_GROUP} {plugin.name!r} from {plugin.origin}: {e}")
            continue
        if not isinstance(backend, Backend):
            found.notes.append(
                f"{SENSORS_GROUP} {plugin.name!r} from {plugin.origin}: not a Backend, not used"
            )
            continue
        backends.append((backend, f"plugin {plugin.name!r} from {plugin.origin}"))
    return backends


def _probe_vendor(
    found: _Found,
    backend: Backend,
    selection: GpuSelection | None,
    options: ProbeOptions,
    environ: Mapping[str, str],
) -> tuple[GpuSelection, bool]:
    """Add `backend`'s sensor (or a note why there is none); its selection, and whether it found devices."""
    label = backend.vendor.label
    chosen = selection or backend.visibility(environ)
    result = backend.probe(chosen, options)
    if isinstance(result, str):
        found.notes.append(f"{label}: {result}")
        return chosen, False
    return chosen, bool(found.probe(label, result))


def _probe_node(found: _Found, bmc: BmcConfig) -> None:
    """The node boundary from the BMC: Redfish where a URL is set, else DCMI where asked for."""
    # a BMC may answer in 30 s: read on its own thread, so the sampler never waits on it
    deadline_s = bmc.timeout_s + 1.0
    if bmc.redfish_url and found.probe("Redfish", OffThreadSensor(RedfishNodeSensor(bmc), deadline_s)):
        return
    if bmc.dcmi:
        found.probe("DCMI", OffThreadSensor(DcmiNodeSensor(bmc), deadline_s))


def _probe_host(
    found: _Found, roots: tuple[Path, Path], config: EstimateConfig, slow_period_s: float
) -> None:
    """RAPL for CPU and DRAM, Grace's power meters for a CPU without RAPL, then the estimate for the rest."""
    rapl = found.probe("RAPL", PowercapSensor(root=roots[0])) or []
    measured = {device.kind for device in rapl}
    grace = HwmonPowerSensor(root=roots[1])
    modules = [d.name for _, d in found.devices if d.profile is not None and d.profile.scope == "module"]
    if Kind.CPU not in measured and modules:  # the module's counter holds Grace and memory: never twice
        inside = [kind for kind in _HOST_KINDS if kind not in measured]
        measured.update(inside)
        found.notes.append(
            f"{'/'.join(inside)} power is inside the module energy of {', '.join(modules)} "
            "(its profile: GPU + Grace CPU + memory): neither measured apart nor estimated"
        )
    elif Kind.CPU not in measured and grace.is_available():  # silent where no ACPI power meter exists
        measured.update(device.kind for device in found.probe("Grace", grace) or [])
        found.notes.extend(f"Grace: {line}" for line in grace.skipped)
    missing = [kind for kind in _HOST_KINDS if kind not in measured]
    if missing and rapl:
        found.notes.append(f"RAPL has no {'/'.join(missing)} zone here (AMD has no DRAM domain)")
    if missing and config.enabled:
        found.probe("estimate", EstimateSensor(config, kinds=missing, utilisation_period_s=slow_period_s))
    elif missing:
        found.notes.append(f"estimate disabled: {'/'.join(missing)} not measured")


class _Found:
    """Accumulates sensors, devices (each UUID once) and notes during one discovery."""

    def __init__(self) -> None:
        self.sensors: list[Sensor] = []
        self.devices: list[tuple[Sensor, DeviceInfo]] = []
        self.notes: list[str] = []
        self._uuids: set[str] = set()

    def probe(self, label: str, sensor: Sensor) -> list[DeviceInfo] | None:
        """Add `sensor`'s new devices; None (and a note) if it cannot be used."""
        try:
            devices = sensor.devices()
        except SensorError as error:
            self.notes.append(f"{label}: {error}")
            sensor.close()
            return None
        fresh = [device for device in devices if device.uuid not in self._uuids]
        if len(fresh) < len(devices):
            self.notes.append(
                f"{label}: {len(devices) - len(fresh)} device(s) already measured, not counted twice"
            )
        if fresh:
            self.sensors.append(sensor)
            self.devices.extend((sensor, device) for device in fresh)
            self._uuids.update(device.uuid for device in fresh)
        else:
            sensor.close()
        return fresh
