"""The constant source: one intensity (or range) for all hours, e.g. a site's published grid average."""

from __future__ import annotations

from dataclasses import dataclass

from wattlog.accounting.carbon.intensity.base import (
    IntensityRef,
    IntensitySource,
    OpenContext,
    RegisteredSource,
)
from wattlog.accounting.ranges import Quantity, check_at_least, format_quantity
from wattlog.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ConstantIntensity:
    """One intensity (or range) for all hours.

    Attributes:
        kg_per_kwh: kg CO2e per kWh (>= 0), a float or a Range.
        source: Where the figure comes from.
    """

    kg_per_kwh: Quantity
    source: str

    def __post_init__(self) -> None:
        check_at_least(self.kg_per_kwh, 0.0, "carbon intensity", "carbon intensity cannot be negative")

    @property
    def label(self) -> str:
        """E.g. "0.332 kg/kWh (as published in ...)"."""
        return f"{format_quantity(self.kg_per_kwh, 'g')} kg/kWh ({self.source})"

    @property
    def constant_kg_per_kwh(self) -> Quantity:
        """The constant."""
        return self.kg_per_kwh

    def kg_per_kwh_at(self, t_s: float) -> Quantity:
        """The constant, whatever the time."""
        del t_s
        return self.kg_per_kwh


def _open(ref: IntensityRef, context: OpenContext) -> IntensitySource:
    if context.constant is None:
        raise ConfigError(f"intensity source {ref.describe()!r} is a site's own figure: name a site")
    return context.constant


SOURCE = RegisteredSource("constant", "the site's own figure (carbon_intensity_kg_per_kwh)", _open)
