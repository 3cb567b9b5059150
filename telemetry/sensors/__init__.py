"""Sensor backends behind one Protocol (base.Sensor), one module per backend.

- base: the Sensor protocol, and the Backend protocol of a vendor's accelerators.
- nvidia, amd, gaudi: the vendor backends discovery loops over (discovery.GPU_BACKENDS).
- nvml (+ nvml_fields, nvidia.toml): NVIDIA GPUs; amdsmi_sensor (+ amd.toml, fake_amdsmi): AMD
  Instinct; gaudi (+ gaudi.toml, fake_pyhlml): Intel Gaudi; powercap: RAPL CPU and DRAM;
  hwmon_power: Grace CPU sockets; estimate: labelled CPU/DRAM model; simulated (+ fake_pynvml,
  traces): the simulated GPU.
- profiles: sensor profiles per board family, from each backend's data file; unknown_board().
  boards: each board's peak FLOP/s, power limit and embodied emissions, from the same files.
- discovery: `discover(DiscoveryConfig(...))` probes them all and says why any was not used.

Names are imported on first use: a module that needs only profiles loads no backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattlog.lazy import lazy_package

if TYPE_CHECKING:
    from wattlog.telemetry.sensors.base import Backend, Sensor
    from wattlog.telemetry.sensors.discovery import Discovery, DiscoveryConfig, discover

_HOMES = {
    "Backend": "wattlog.telemetry.sensors.base",
    "Discovery": "wattlog.telemetry.sensors.discovery",
    "DiscoveryConfig": "wattlog.telemetry.sensors.discovery",
    "Sensor": "wattlog.telemetry.sensors.base",
    "discover": "wattlog.telemetry.sensors.discovery",
}

__all__ = ["Backend", "Discovery", "DiscoveryConfig", "Sensor", "discover"]


lazy_package(__name__, _HOMES)
