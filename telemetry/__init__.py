"""Telemetry: sensors -> sampler -> integrator -> exporter, composed by the agent.

- errors: WattlogError and the typed sensor errors.
- types: Kind, Source, DeviceInfo, Reading.
- clock: Clock protocol, SystemClock, FakeClock.
- sensors/: the Sensor protocol and one module per backend.
- sampler: Sampler (25 ms, absolute deadlines, background thread), SamplerStats.
- integrator: Integrator (counter differences or trapezoids, resets, wraps, gaps, intervals).
- uncertainty: BandModel (calibration x partial observation x gaps), phase-lock detection.
"""

from __future__ import annotations

import logging

from telemetry.clock import Clock, FakeClock, SystemClock
from telemetry.errors import (
    ConfigError,
    DeviceLost,
    LedgerError,
    NotSupported,
    SensorError,
    SensorUnavailable,
    WattlogError,
)
from telemetry.integrator import Integrator
from telemetry.sampler import Sampler, SamplerStats
from telemetry.types import DeviceEnergy, DeviceInfo, EnergyInterval, Gap, Kind, Reading, Source
from telemetry.uncertainty import BandModel

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BandModel",
    "Integrator",
    "Sampler",
    "SamplerStats",
    "Clock",
    "ConfigError",
    "DeviceEnergy",
    "DeviceInfo",
    "EnergyInterval",
    "DeviceLost",
    "FakeClock",
    "Gap",
    "Kind",
    "LedgerError",
    "NotSupported",
    "Reading",
    "SensorError",
    "SensorUnavailable",
    "Source",
    "SystemClock",
    "WattlogError",
]
