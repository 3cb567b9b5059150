"""Telemetry: sensors -> sampler -> integrator -> exporter, composed by the agent.

- types: DeviceInfo, Reading, DeviceEnergy, Vendor, SensorProfile (Kind, Source and the ledger rows
  are wattlog.records).
- sensors/: the Sensor protocol, the vendor backend registry and one module per backend.
- sampler: Sampler (25 ms, absolute deadlines, background thread), SamplerStats.
- integrator: Integrator (counter differences or trapezoids, resets, wraps, gaps, intervals).
- uncertainty: BandModel (calibration x partial observation x repetition x gaps, from each device's
  sensor profile), phase-lock detection.
- windows: Window, Windows (`with agent.window("eval"):`, edges exact to the counter).
- exporter, agent: the Prometheus collector and what a node runs.

This package imports no other wattlog layer; errors and the clock are wattlog.errors and wattlog.clock.
Names are imported on first use, so importing one module (wattlog.telemetry.job, an environment
parser) loads neither the sampler, nor a sensor, nor psutil.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from wattlog.lazy import lazy_package

if TYPE_CHECKING:
    from wattlog.telemetry.integrator import Integrator
    from wattlog.telemetry.sampler import Sampler, SamplerStats
    from wattlog.telemetry.types import DeviceEnergy, DeviceInfo, PluginVendor, Reading, SensorProfile, Vendor
    from wattlog.telemetry.uncertainty import BandModel

logging.getLogger(__name__).addHandler(logging.NullHandler())

_HOMES = {
    "BandModel": "wattlog.telemetry.uncertainty",
    "DeviceEnergy": "wattlog.telemetry.types",
    "DeviceInfo": "wattlog.telemetry.types",
    "Integrator": "wattlog.telemetry.integrator",
    "Reading": "wattlog.telemetry.types",
    "Sampler": "wattlog.telemetry.sampler",
    "SamplerStats": "wattlog.telemetry.sampler",
    "SensorProfile": "wattlog.telemetry.types",
    "PluginVendor": "wattlog.telemetry.types",
    "Vendor": "wattlog.telemetry.types",
}

__all__ = [
    "BandModel",
    "DeviceEnergy",
    "DeviceInfo",
    "Integrator",
    "Reading",
    "Sampler",
    "SamplerStats",
    "SensorProfile",
    "PluginVendor",
    "Vendor",
]


lazy_package(__name__, _HOMES)
