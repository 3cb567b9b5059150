"""Sensor backends behind one Protocol (base.Sensor), one module per backend.

- base: the Sensor protocol.
- nvml: NVIDIA GPUs; powercap: RAPL CPU and DRAM; estimate: labelled CPU/DRAM model;
  simulated (+ fake_pynvml, traces): the simulated GPU.
- discovery: `discover()` probes them all and says why any was not used.
"""

from __future__ import annotations

from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.discovery import Discovery, discover

__all__ = ["Discovery", "Sensor", "discover"]
