"""Telemetry: sensors -> sampler -> integrator -> exporter, composed by the agent.

- types: DeviceInfo, Reading, DeviceEnergy (Kind, Source and the ledger rows are wattlog.records).
- sensors/: the Sensor protocol and one module per backend.
- sampler: Sampler (25 ms, absolute deadlines, background thread), SamplerStats.
- integrator: Integrator (counter differences or trapezoids, resets, wraps, gaps, intervals).
- uncertainty: BandModel (calibration x partial observation x repetition x gaps), phase-lock detection.
- windows: Window, Windows (`with agent.window("eval"):`, edges exact to the counter).
- exporter, agent: the Prometheus collector and what a node runs.

This package imports no other wattlog layer; errors and the clock are wattlog.errors and wattlog.clock.
"""

from __future__ import annotations

import logging

from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler, SamplerStats
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo, Reading
from wattlog.telemetry.uncertainty import BandModel

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BandModel",
    "DeviceEnergy",
    "DeviceInfo",
    "Integrator",
    "Reading",
    "Sampler",
    "SamplerStats",
]
