"""Carbon intensity: one module per source behind the :class:`IntensitySource` protocol, found by name.

- ``base``: the protocol, :class:`HourlySeries`, :class:`IntensityRef` (a source by name, with its
  series and zone) and :class:`RegisteredSource` (a registry entry).
- ``hours``: hour starts, timestamps, energy split by hour (ledger rows or a live total).
- ``constant``, ``csv_file``, ``electricitymaps``, ``eia930``, ``stored``: the sources.
- ``registry``: :func:`~wattlog.accounting.carbon.intensity.registry.by_name`, the CLI's formats, "auto".
"""

from __future__ import annotations

from wattlog.accounting.carbon.intensity.base import (
    HourlySeries,
    HourProvenance,
    IntensityRef,
    IntensitySource,
    OpenContext,
    RegisteredSource,
)
from wattlog.accounting.carbon.intensity.constant import ConstantIntensity
from wattlog.accounting.carbon.intensity.hours import (
    HourSplitter,
    hour_start_s,
    split_by_hour_mwh,
    timestamp_s,
)
from wattlog.accounting.units import HOUR_S

__all__ = [
    "HOUR_S",
    "ConstantIntensity",
    "HourProvenance",
    "HourSplitter",
    "HourlySeries",
    "IntensityRef",
    "IntensitySource",
    "OpenContext",
    "RegisteredSource",
    "hour_start_s",
    "split_by_hour_mwh",
    "timestamp_s",
]
