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


@pytest.mark.parametrize(
    ("value", "quantity", "text"),
    [
        (3.0, "energy", "3.00 J"),
        (540.0, "energy", "0.150 Wh"),  # a one-minute CPU demo at 9 W: Wh, not "540 J"
        (3.6e6 * 1.234, "energy", "1.23 kWh"),
        (3.6e9 * 131.4, "energy", "131 MWh"),
        (3.6e9 * 1022.0, "energy", "1,020 MWh"),
        (0.103, "mass", "103 mg"),
        (999.96, "mass", "1.00 kg"),
        (52.19e6, "mass", "52.2 t"),
        (0.5, "volume", "500 mL"),
        (7.48e-7, "volume", "0.748 uL"),  # a short run's water, was "0.000000748 L"
        (202_800.0, "volume", "203 kL"),
        (1.96e3, "power", "1.96 kW"),
        (2.5e6, "ramp", "2.50 MW/s"),
    ],
)
def test_readable_picks_the_unit_by_magnitude_with_three_significant_figures(
    value: float, quantity: str, text: str
) -> None:
    assert units.readable(value, quantity) == text
    assert "e" not in text.split()[0]


def test_tiny_and_huge_numbers_are_positional() -> None:
    assert units.sig3(1.38e-07) == "0.000000138"
    assert units.sig3(9.51e-08) == "0.0000000951"
    assert units.sig3(123_456_789.0) == "123,000,000"


def test_a_one_minute_demo_reads_in_wh_and_g() -> None:
    from wattlog.accounting.publishing.render import TableRow, readable_summary

    mwh = 540.0 / 3.6e9  # 60 s at 9 W
    row = TableRow(
        "gpt-small (demo, final)", 540.0, 1.58, 0.436, mwh * 1.58 * 0.436, Range(1.29, 4.26),
        Range(mwh * 1.58 * 1.29, mwh * 1.58 * 4.26), "estimated",
    )  # fmt: skip
    assert readable_summary(row) == (
        "gpt-small (demo, final): IT energy 0.150 Wh, emissions 103 mg CO2e, "
        "water 0.306 - 1.01 mL (energy source: estimated)"
    )
