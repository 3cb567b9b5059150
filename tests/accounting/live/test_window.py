"""The cleanest window on a forecast, checked by hand."""

from __future__ import annotations

import pytest

from wattlog.accounting.carbon.intensity.live.window import cleanest_window
from wattlog.errors import ConfigError

H = 3600
FORECAST = {0: 0.3, H: 0.2, 2 * H: 0.1, 3 * H: 0.15, 4 * H: 0.4}


def test_the_cleanest_two_hours_and_the_tonnes_saved() -> None:
    choice = cleanest_window(FORECAST, 2, power_kw=100.0, pue=1.2)
    # sums of two hours: from 0: 0.5, H: 0.3, 2H: 0.25, 3H: 0.55 -> start at 2H
    assert (choice.start_s, choice.now_start_s) == (2 * H, 0)
    assert choice.mean_kg_per_kwh == pytest.approx(0.125) and choice.now_mean_kg_per_kwh == pytest.approx(
        0.25
    )
    # 100 kW x 1.2 x (0.5 - 0.25) kg/kWh over the hours = 30 kg
    assert choice.saved_t == pytest.approx(0.030)
    assert choice.saved_fraction == pytest.approx(0.5)


def test_without_a_power_there_are_no_tonnes_and_ties_take_the_earliest() -> None:
    choice = cleanest_window({0: 0.2, H: 0.1, 2 * H: 0.1}, 1)
    assert choice.start_s == H and choice.saved_t is None


@pytest.mark.parametrize(
    ("forecast", "hours"), [(FORECAST, 6), ({0: 0.1, 2 * H: 0.1}, 2), (FORECAST, 0), ({}, 1)]
)
def test_a_forecast_too_short_is_an_error(forecast: dict[int, float], hours: int) -> None:
    with pytest.raises(ConfigError):
        cleanest_window(forecast, hours)
