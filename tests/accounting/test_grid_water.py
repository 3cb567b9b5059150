"""Off-site water from the grid's fuel mix, hour by hour, beside the constant WUE (checked by hand)."""

from __future__ import annotations

import pytest

from wattlog.accounting.carbon.grid_water import GridWater, fuel_water, mix_water, water_series
from wattlog.accounting.publishing.footprint import water_kl
from wattlog.accounting.ranges import Range

H = 3600


def test_every_factor_has_a_source_and_the_gallon_conversion() -> None:
    factors = fuel_water()
    assert all(f.source.startswith("Macknick et al. 2012") for f in factors.values())
    assert factors["Coal"].l_per_kwh == pytest.approx(687 * 3.785411784 / 1000, abs=1e-3)
    assert factors["Wind"].l_per_kwh == 0.0


def test_an_hours_water_is_the_generation_weighted_mean() -> None:
    assert mix_water({"Coal": 100.0, "Wind": 100.0}, 1.29) == pytest.approx((2.601 / 2, False))
    # petroleum has no factor: the site's WUE stands in for its share, and the hour is marked
    litres, assumed = mix_water({"Coal": 100.0, "Wind": 100.0, "All Petroleum Products": 100.0}, 1.29) or (
        0,
        0,
    )
    assert litres == pytest.approx((2.601 + 1.29) / 3) and assumed
    assert mix_water({"Solar": -5.0}, 1.29) is None  # charging only: no generation


def test_grid_water_by_hour_beside_the_constant() -> None:
    mixes = {0: {"Coal": 100.0, "Wind": 100.0}}
    grid = GridWater(water_series(mixes, "ERCO", 1.29, "EIA API v2"), 1.29, "OLMo 2 paper")
    by_hour = {0: 1.0, H: 1.0}  # MWh of IT energy; the second hour has no mix
    # hand check: 1.2 x (1 x 1.3005 + 1 x 1.29 [the site's WUE]) = 3.1086 kL, against 1.2 x 2 x 1.29 = 3.096
    assert grid.offsite_kl(by_hour, 1.2) == pytest.approx(3.1086)
    assert water_kl(2.0, 1.2, 0.0, 1.29) == pytest.approx(3.096)
    assert "grid mix of ERCO (EIA API v2)" in grid.provenance_at(0).source
    fallback = grid.provenance_at(H)
    assert (
        fallback.estimated
        and "no fuel mix: the site's off-site WUE, 1.29 L/kWh (OLMo 2 paper)" in fallback.source
    )


def test_a_range_wue_gives_a_range_where_it_stands_in() -> None:
    grid = GridWater(water_series({}, "ERCO", 1.0, "-"), Range(1.29, 4.26), "Llama 2 card")
    assert grid.offsite_kl({0: 1.0}, 1.1) == Range(1.1 * 1.29, 1.1 * 4.26)
