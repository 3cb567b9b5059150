"""Sensor backends behind one Protocol (base.Sensor), one module per backend."""

from __future__ import annotations

from telemetry.sensors.base import Sensor

__all__ = ["Sensor"]
