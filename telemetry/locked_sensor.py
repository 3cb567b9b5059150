"""A sensor restricted to the devices an agent locked (another agent measures the rest)."""

from __future__ import annotations

from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.types import DeviceInfo, Reading


class OnlyDevices:
    """A sensor restricted to the devices this agent locked.

    Args:
        sensor: The sensor that offers more devices.
        devices: Those of them this agent measures.
    """

    def __init__(self, sensor: Sensor, devices: list[DeviceInfo]) -> None:
        self._sensor = sensor
        self._devices = devices

    def devices(self) -> list[DeviceInfo]:
        """The locked devices."""
        return list(self._devices)

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """Read `device` from the wrapped sensor."""
        return self._sensor.read(device, t_s)

    def close(self) -> None:
        """Close the wrapped sensor."""
        self._sensor.close()
