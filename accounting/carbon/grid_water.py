"""Off-site water hour by hour from the grid's fuel mix, beside the site's constant off-site WUE.

Most of a training run's water is consumed off-site, in the power plants, and it follows
the grid's fuel mix (Li et al., "Making AI less thirsty", 2023). Where a provider gives
generation by fuel (EIA-930 files, EIA's API), an hour's off-site water is the
generation-weighted mean of per-fuel consumptive factors (``data/grid_water.toml``, each
with its source); a fuel without a factor takes the site's off-site WUE for its share
and the hour is marked estimated. An hour without a mix takes the site's WUE, labelled.
The paper's constant convention (:func:`wattlog.accounting.publishing.footprint.water_kl`) stays the
default of Table 19 rows; this is the hour-by-hour figure shown beside it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from wattlog.accounting.carbon.intensity.base import HourlySeries, HourProvenance
from wattlog.accounting.carbon.intensity.hours import hour_start_s
from wattlog.accounting.ranges import Quantity, bounds, format_quantity
from wattlog.errors import ConfigError


@dataclass(frozen=True, slots=True)
class FuelWater:
    """Consumptive water of one fuel's generation.

    Attributes:
        l_per_kwh: Litres per kWh generated.
        source: Where the figure comes from.
    """

    l_per_kwh: float
    source: str


@cache
def fuel_water() -> dict[str, FuelWater]:
    """The per-fuel factors of ``data/grid_water.toml``, by EIA-930 fuel name."""
    text = resources.files("wattlog.accounting").joinpath("data/grid_water.toml").read_text(encoding="utf-8")
    fuels = tomllib.loads(text)["fuels"]
    return {name: FuelWater(float(row["l_per_kwh"]), str(row["source"])) for name, row in fuels.items()}


def mix_water(generation_mwh: Mapping[str, float], site_wue_l_per_kwh: Quantity) -> tuple[float, bool] | None:
    """L/kWh of one hour's generation by fuel, and whether the site's WUE stood in for a fuel.

    A fuel without a factor takes the site's off-site WUE (its upper bound, if a range) for its
    share. Negative generation (storage charging) counts as 0. None when nothing was generated.
    """
    factors = fuel_water()
    total = sum(max(g, 0.0) for g in generation_mwh.values())
    if total <= 0:
        return None
    stand_in = bounds(site_wue_l_per_kwh)[1]
    litres = 0.0
    assumed = False
    for fuel, mwh in generation_mwh.items():
        known = factors.get(fuel)
        assumed = assumed or (known is None and mwh > 0)
        litres += max(mwh, 0.0) * (known.l_per_kwh if known else stand_in)
    return litres / total, assumed


def water_series(
    mixes: Mapping[int, Mapping[str, float]], zone: str, site_wue_l_per_kwh: Quantity, fetched_by: str
) -> HourlySeries:
    """Off-site L/kWh per hour of the mixes (hour start -> MWh by fuel), each hour with its provenance.

    Args:
        mixes: Generation by fuel of each hour.
        zone: The balancing authority, for the provenance.
        site_wue_l_per_kwh: The site's off-site WUE, for fuels without a factor.
        fetched_by: Where the mix came from, e.g. "eia-api ERCO".
    """
    values: dict[int, float] = {}
    provenance: dict[int, HourProvenance] = {}
    for hour, mix in mixes.items():
        mixed = mix_water(mix, site_wue_l_per_kwh)
        if mixed is None:
            continue
        values[hour], assumed = mixed
        stand_in = "; the site's WUE for fuels without a factor" if assumed else ""
        provenance[hour] = HourProvenance(
            f"grid mix of {zone} ({fetched_by}) x Macknick et al. 2012 per-fuel water{stand_in}", assumed
        )
    return HourlySeries(values, f"grid water of {zone} from its fuel mix", provenance)


@dataclass(frozen=True, slots=True)
class GridWater:
    """Off-site water per hour: from the grid's mix where known, else the site's WUE, labelled per hour.

    Attributes:
        mix: L/kWh per hour from the fuel mix, each with its provenance.
        site_wue_l_per_kwh: The site's off-site WUE, for hours without a mix.
        site_source: Where the site's WUE comes from.
    """

    mix: HourlySeries
    site_wue_l_per_kwh: Quantity
    site_source: str

    def l_per_kwh_at(self, t_s: float) -> Quantity:
        """Off-site litres per kWh of facility energy in the hour containing `t_s`."""
        found = self.mix.kg_per_kwh_by_hour.get(hour_start_s(t_s))  # the series' value column: L/kWh here
        return found if found is not None else self.site_wue_l_per_kwh

    def provenance_at(self, t_s: float) -> HourProvenance:
        """Where the hour's figure comes from; an hour without a mix is marked estimated."""
        found = self.mix.provenance.get(hour_start_s(t_s))
        if found is not None:
            return found
        wue = format_quantity(self.site_wue_l_per_kwh, "g")
        return HourProvenance(f"no fuel mix: the site's off-site WUE, {wue} L/kWh ({self.site_source})", True)

    def offsite_kl(self, by_hour_mwh: Mapping[int, float], pue: Quantity) -> Quantity:
        """Off-site water, kL: each hour's IT energy x PUE x that hour's L/kWh (MWh x L/kWh = kL).

        Raises:
            ConfigError: A negative energy.
        """
        total: Quantity = 0.0
        for hour, mwh in by_hour_mwh.items():
            if mwh < 0:
                raise ConfigError(f"energy {mwh} MWh in hour {hour} is negative")
            total = total + mwh * pue * self.l_per_kwh_at(hour)
        return total
