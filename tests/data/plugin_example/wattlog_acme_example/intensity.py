"""Acme's grid: one published intensity per Acme region (the series a site names)."""

from __future__ import annotations

from wattlog.accounting.carbon.intensity import ConstantIntensity, IntensityRef, OpenContext, RegisteredSource
from wattlog.errors import ConfigError

REGIONS = {"north": 0.123, "south": 0.456}


def _open(ref: IntensityRef, context: OpenContext) -> ConstantIntensity:
    try:
        return ConstantIntensity(REGIONS[ref.series], f"Acme grid, region {ref.series}")
    except KeyError:
        raise ConfigError(f"Acme grid has no region {ref.series!r}: use {', '.join(REGIONS)}") from None


SOURCE = RegisteredSource("acme-grid", "Acme's grid, by region (series: the region)", _open)
