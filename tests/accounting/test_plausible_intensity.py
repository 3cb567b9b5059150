"""Fault: a grid provider's impossible values were stored as valid.

On 38e5f82 an EIA hour with negative natural-gas generation was mixed with the gas
counted as 0 and stored (0.011 kg/kWh: the wind alone), and any intensity a provider sent
was stored. Now such hours are refused: missing, named in one note, never stored.
"""

from __future__ import annotations

import math

import pytest

from wattlog.accounting.carbon.intensity.base import HourlySeries
from wattlog.accounting.carbon.intensity.live.client import Fetch, HttpClient
from wattlog.accounting.carbon.intensity.live.eia_api import EiaApi
from wattlog.accounting.carbon.plausible import implausible_intensity, plausible_fetch

H = 3600


def test_negative_gas_generation_refuses_the_hour() -> None:
    api = EiaApi(HttpClient("eia-api", "http://unused"), "key", lambda: 0.0)
    mixes = {0: {"Natural Gas": -50.0, "Wind": 100.0}, H: {"Natural Gas": 50.0, "Wind": 50.0}}
    fetched = api.from_mixes("ERCO", [0, H], mixes)
    assert list(fetched.series.kg_per_kwh_by_hour) == [H] and fetched.missing == (0,)


def test_pumping_storage_may_be_negative() -> None:
    api = EiaApi(HttpClient("eia-api", "http://unused"), "key", lambda: 0.0)
    mix = {"Hydropower and Pumped Storage": -20.0, "Wind": 100.0}
    assert api.from_mixes("ERCO", [0], {0: mix}).series.kg_per_kwh_by_hour == {0: 0.011}


@pytest.mark.parametrize("kg", [2.5, -0.1, math.nan, math.inf, 1e12])
def test_an_impossible_intensity_is_refused_with_one_note(kg: float) -> None:
    series = HourlySeries({0: 0.3, H: kg, 2 * H: 0.4}, "ukgrid GB")
    kept, note = plausible_fetch(Fetch(series, (5 * H,)))
    assert kept.series.kg_per_kwh_by_hour == {0: 0.3, 2 * H: 0.4}
    assert kept.missing == (H, 5 * H)
    assert note.startswith("ukgrid GB: 1 hour(s) refused as physically impossible") and "\n" not in note


def test_the_bounds_are_inclusive() -> None:
    assert implausible_intensity(0.0) is None and implausible_intensity(2.0) is None
