"""Unit conversions keep their units in their names and work on floats and ranges."""

from __future__ import annotations

import doctest

import pytest

from wattlog.accounting import units
from wattlog.accounting.ranges import Range
from wattlog.accounting.units import (
    j_to_kwh,
    j_to_mwh,
    kg_to_t,
    kwh_to_j,
    kwh_to_mwh,
    l_to_kl,
    mwh_to_j,
    mwh_to_kwh,
)


def test_doctests_pass() -> None:
    assert doctest.testmod(units).failed == 0


def test_joules_to_energy_units() -> None:
    assert j_to_kwh(3.6e6) == 1.0
    assert j_to_mwh(3.6e9) == pytest.approx(1.0)
    assert kwh_to_j(2.0) == 7.2e6
    assert mwh_to_j(1.0) == 3.6e9
    assert kwh_to_mwh(1000.0) == 1.0
    assert mwh_to_kwh(1.0) == 1000.0


def test_round_trips() -> None:
    for x in (0.0, 1.5, 123456.789):
        assert mwh_to_j(j_to_mwh(x)) == pytest.approx(x)
        assert kwh_to_mwh(mwh_to_kwh(x)) == pytest.approx(x)


def test_ranges_convert_both_ends() -> None:
    assert j_to_mwh(Range(3.6e9, 7.2e9)) == Range(1.0, 2.0)
    assert kg_to_t(Range(1000.0, 2000.0)) == Range(1.0, 2.0)
    assert l_to_kl(202_000.0) == 202.0


def test_mwh_times_kg_per_kwh_is_tonnes() -> None:
    # 1 MWh at 1 kg/kWh: 1000 kWh x 1 kg = 1000 kg = 1 t, with no conversion factor.
    assert kg_to_t(mwh_to_kwh(1.0) * 1.0) == 1.0
