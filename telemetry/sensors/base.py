"""The one small Protocol every sensor backend implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from wattlog.telemetry.types import DeviceInfo, Reading


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
