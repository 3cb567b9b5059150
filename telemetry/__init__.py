"""Telemetry: sensors -> sampler -> integrator -> exporter, composed by the agent.

- errors: WattlogError and the typed sensor errors.
- types: Kind, Source, DeviceInfo, Reading.
- clock: Clock protocol, SystemClock, FakeClock.
- sensors/: the Sensor protocol and one module per backend.
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
from telemetry.types import DeviceEnergy, DeviceInfo, EnergyInterval, Gap, Kind, Reading, Source

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
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
