"""The Acme backend: one simulated Acme A1 board drawing a constant 250 W, no energy counter."""

from __future__ import annotations

from collections.abc import Mapping

from wattlog.records import Kind, Source
from wattlog.telemetry.selection import GpuSelection
from wattlog.telemetry.sensors.base import ProbeOptions
from wattlog.telemetry.types import DeviceInfo, PluginVendor, Reading

ACME = PluginVendor("acme", "Acme")


class AcmeSensor:
    """The Sensor over the one board."""

    def devices(self) -> list[DeviceInfo]:
        """The board, labelled simulated (it is not a real meter)."""
        return [
            DeviceInfo(
                "ACME-A1-0", "Acme A1", Kind.GPU, Source.SIMULATED, False, vendor=ACME, note="acme plugin"
            )
        ]

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """250 W, always."""
        return Reading(device.uuid, t_s, power_w=250.0)

    def close(self) -> None:
        """Nothing to release."""


class AcmeBackend:
    """The Acme vendor: every board is the job's."""

    vendor = ACME

    def visibility(self, environ: Mapping[str, str], *, whole_node: bool = False) -> GpuSelection:
        """All boards (Acme has no visibility variable)."""
        return GpuSelection(whole_node, None, None, "Acme: every board")

    def probe(self, selection: GpuSelection, options: ProbeOptions) -> AcmeSensor | str:
        """The sensor."""
        return AcmeSensor()
