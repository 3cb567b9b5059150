"""The one small Protocol every sensor implements, and the one every vendor backend implements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from wattlog.clock import Clock
from wattlog.errors import SensorError
from wattlog.telemetry.selection import GpuSelection, Visibility, job_selection
from wattlog.telemetry.types import AnyVendor, DeviceInfo, Reading, Vendor

COUNTER_STOPPED = (
    "its energy counter stopped answering: from here on a gap, not power integrated under a counter's label"
)
"""Why a device whose counter stops answering mid-run is marked lost (the integrator's energy would
otherwise stall silently: a counter device's energy comes from its counter alone)."""
COUNTER_CHECK = (0.1, 10.0)
"""A counter's increase at start-up must be within these multiples of power x time (Zeus's check),
else it is not trusted: the backend (AMD) or the integrator integrates power instead; the validity
gate marks a run that still counts it."""


def counter_trusted(counter_j: float, power_j: float) -> bool:
    """Whether a counter's increase passes the start-up check against power x time (COUNTER_CHECK).

    Without power x time (zero) there is nothing to check against: trusted.
    """
    low, high = COUNTER_CHECK
    return power_j <= 0 or low * power_j <= counter_j <= high * power_j


@runtime_checkable
class Sensor(Protocol):
    """A backend that knows some devices and reads them.

    Constructors do no I/O; `devices()` may probe. `read` raises
    :class:`~wattlog.errors.DeviceLost` for a device that stopped answering and
    :class:`~wattlog.errors.SensorError` for a failed read; the sampler records
    either as a gap and goes on.
    """

    def devices(self) -> list[DeviceInfo]:
        """The devices this sensor measures (already filtered to the job's)."""
        ...

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """Read `device` now; `t_s` is the sampler's monotonic time, stamped on the reading."""
        ...

    def close(self) -> None:
        """Release the backend (nvmlShutdown, file handles)."""
        ...


@dataclass(frozen=True, slots=True)
class ProbeOptions:
    """What discovery hands every vendor backend's probe.

    Attributes:
        clock: The sampler's clock (driver timestamps are put on it); None: the system clock.
        slow_period_s: How often slow metrics (utilisation, temperature, memory, power limit) are read.
        modules: Vendor library modules by import name ("pynvml"), e.g. a simulated one for tests;
            a backend imports the real one for a name not given.
    """

    clock: Clock | None = None
    slow_period_s: float = 1.0
    modules: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """One vendor's accelerators: which of them a process sees, and a Sensor that reads them.

    Discovery loops over the registered backends (discovery.GPU_BACKENDS, then those the
    ``wattlog.sensors`` entry points bring: discovery.vendor_backends); everything a vendor does
    differently (its library, its visibility variables, its sensor profiles) stays inside its
    backend. A plugin's backend names its vendor with a :class:`PluginVendor`.
    """

    @property
    def vendor(self) -> AnyVendor:
        """Who made the accelerators; notes on screen start with its name."""
        ...

    def visibility(self, environ: Mapping[str, str], *, whole_node: bool = False) -> GpuSelection:
        """The job's accelerators by this vendor's rules (its runtime's variables, SLURM's binding).

        Raises:
            ConfigError: A visibility variable is set but cannot be read without guessing.
        """
        ...

    def probe(self, selection: GpuSelection, options: ProbeOptions) -> Sensor | str:
        """A Sensor with at least one of the selected accelerators, or one line saying why not."""
        ...


class RuleVisibility:
    """A backend's `vendor` and `visibility` from two class attributes: its vendor and its rules.

    Every backend chooses its job's devices the same way (its runtime's variables, then SLURM's
    binding); only the rules differ, and they live in telemetry/selection.py.
    """

    vendor: ClassVar[Vendor]
    rules: ClassVar[tuple[Visibility, ...]]

    def visibility(self, environ: Mapping[str, str], *, whole_node: bool = False) -> GpuSelection:
        """The job's accelerators by this vendor's rules (see `rules`)."""
        return job_selection(environ, whole_node=whole_node, rules=self.rules)


def sensor_or_reason(sensor: Sensor, selection: GpuSelection, none_listed: str) -> Sensor | str:
    """`sensor` if it offers a device of the job, else one line saying why not (and it is closed).

    A backend's probe ends this way whatever its library: the library failed, listed nothing
    (`none_listed`), or listed only devices outside the job's selection.
    """
    try:
        devices = sensor.devices()
    except SensorError as error:
        sensor.close()
        return str(error)
    if devices:
        return sensor
    sensor.close()
    return none_listed if selection.selects_all else f"no GPU of this job ({selection.origin})"
