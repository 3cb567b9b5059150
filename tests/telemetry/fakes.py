"""Test devices shared by the agent, window and fault tests."""

from __future__ import annotations

from wattlog.records import Kind, Source
from wattlog.telemetry.types import DeviceInfo, Reading


class ConstantSensor:
    """A real-looking (non-simulated) device without a counter at constant power: what locks apply to.

    Args:
        uuid: The device's key.
        power_w: The power every read returns, watts.
    """

    def __init__(self, uuid: str = "GPU-lock-test", power_w: float = 200.0) -> None:
        self.info = DeviceInfo(
            uuid, "test board", Kind.GPU, Source.SAMPLED, has_counter=False, power_limit_w=400
        )
        self.power_w = power_w
        self.closed = False

    def devices(self) -> list[DeviceInfo]:
        return [self.info]

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        return Reading(device.uuid, t_s, power_w=self.power_w)

    def close(self) -> None:
        self.closed = True
