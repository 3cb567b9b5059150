"""Sums of energy rows: the band's systematic parts add up, its sampling-error parts in quadrature."""

from __future__ import annotations

import functools
import math
import operator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from wattlog.records import EnergyFigure, EnergyInterval, Kind, Source, band_of_sum, summed_band

# one row: (energy_j, systematic half-widths below and above, sampling-error parts below and above)
_ROW = st.tuples(*(st.floats(0.0, 1e6, allow_nan=False) for _ in range(5)))


def _sums(rows: list[tuple[float, float, float, float, float]]) -> tuple[float, ...]:
    """What the ledger keeps of `rows`: energy, band, sampling-error parts and their squares, summed."""
    energy = sum(e for e, *_ in rows)
    low = sum(e - sl - rl for e, sl, _, rl, _ in rows)
    high = sum(e + sh + rh for e, _, sh, _, rh in rows)
    return (
        energy,
        low,
        high,
        sum(r[3] for r in rows),
        sum(r[4] for r in rows),
        sum(r[3] ** 2 for r in rows),
        sum(r[4] ** 2 for r in rows),
    )


def test_without_sampling_error_parts_the_band_adds_up_linearly() -> None:
    assert summed_band(80.0, 130.0, 0.0, 0.0, 0.0, 0.0) == (80.0, 130.0)


def test_one_row_keeps_its_own_band() -> None:
    assert summed_band(85.0, 115.0, 10.0, 10.0, 100.0, 100.0) == (85.0, 115.0)


def test_an_hour_of_equal_rows_narrows_their_sampling_error_by_the_root_of_their_number() -> None:
    # 360 rows of 100 J: systematic -5/+5 J, sampling error 10 J each side
    low, high = summed_band(360 * 85.0, 360 * 115.0, 3600.0, 3600.0, 360 * 100.0, 360 * 100.0)
    assert (low, high) == (
        pytest.approx(360 * 95.0 - 10 * math.sqrt(360)),
        pytest.approx(360 * 105.0 + 10 * math.sqrt(360)),
    )


@given(st.lists(_ROW, min_size=1, max_size=50))
def test_the_summed_band_lies_between_the_systematic_band_and_the_linear_one(rows) -> None:
    energy, low, high, random_low, random_high, low_sq, high_sq = _sums(rows)
    summed_low, summed_high = summed_band(low, high, random_low, random_high, low_sq, high_sq)
    slack = 1e-9 * (energy + sum(sum(r[1:]) for r in rows) + 1.0)
    assert low - slack <= summed_low <= low + random_low + slack  # never wider than linear, never past
    assert high - random_high - slack <= summed_high <= high + slack  # the systematic band
    assert summed_low <= energy + slack and summed_high >= energy - slack


@given(st.lists(_ROW, min_size=1, max_size=30))
def test_adding_figures_gives_the_ledgers_summed_band_in_any_grouping(rows) -> None:
    figures = [
        EnergyFigure(Kind.GPU, Source.COUNTER, e, e - sl - rl, e + sh + rh, rl, rh)
        for e, sl, sh, rl, rh in rows
    ]
    energy, *terms = _sums(rows)
    want_low, want_high = summed_band(*terms)
    left = functools.reduce(operator.add, figures)
    right = functools.reduce(lambda acc, f: f + acc, reversed(figures))
    slack = 1e-6 * (1.0 + sum(e + sl + sh + rl + rh for e, sl, sh, rl, rh in rows))
    for total in (left, right):
        assert total.energy_j == pytest.approx(energy, abs=slack)
        assert total.low_j == pytest.approx(want_low, abs=slack)
        assert total.high_j == pytest.approx(want_high, abs=slack)
        assert total.random_low_j == pytest.approx(math.sqrt(terms[4]), abs=slack)


def test_an_interval_is_a_figure_with_who_and_when() -> None:
    row = EnergyInterval.of("n", "gpu0", Kind.GPU, Source.SAMPLED, 0.0, 10.0, 100.0, 90.0, 120.0, 3.0, 4.0)
    assert row.figure == EnergyFigure(Kind.GPU, Source.SAMPLED, 100.0, 90.0, 120.0, 3.0, 4.0)
    assert band_of_sum([row, row]) == pytest.approx(
        ((row.figure + row.figure).low_j, (row.figure + row.figure).high_j)
    )


def test_figures_of_different_kinds_or_sources_do_not_add() -> None:
    gpu = EnergyFigure(Kind.GPU, Source.COUNTER, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="cannot add"):
        gpu + EnergyFigure(Kind.CPU, Source.COUNTER, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="cannot add"):
        gpu + EnergyFigure(Kind.GPU, Source.ESTIMATED, 1.0, 1.0, 1.0)


def _whole_mj(value: float) -> bool:
    return round(value * 1000) / 1000 == value


@given(
    st.floats(0.0, 1e7),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.integers(-1, 1),
)
@example(64.0, 0.0, 1.0, 0.0, 1.0, 1)  # a side whose float difference is a hair under its millijoules
def test_a_figure_in_millijoules_keeps_its_band_and_its_random_parts_inside_their_sides(
    energy: float, below: float, above: float, random_low: float, random_high: float, shift_mj: int
) -> None:
    """The band rounded outward holds the figure's band and its (shifted) energy; each random part
    rounded down stays inside its side; every term is a whole number of millijoules."""
    low, high = energy * (1 - below), energy * (1 + above)
    random_parts = ((energy - low) * random_low, (high - energy) * random_high)
    figure = EnergyFigure(Kind.GPU, Source.COUNTER, energy, low, high, *random_parts)
    energy_mj = max(round(energy * 1000) + shift_mj, 0)  # a running total's difference: within 1 mJ
    kept = figure.to_millijoules(energy_mj)
    terms = (kept.energy_j, kept.low_j, kept.high_j, kept.random_low_j, kept.random_high_j)
    assert all(_whole_mj(term) for term in terms) and kept.energy_j == energy_mj / 1000
    assert kept.low_j <= min(figure.low_j, kept.energy_j) and kept.high_j >= max(figure.high_j, kept.energy_j)
    # the sides in whole millijoules, as the figure holds them (128.0 - 64.001 is 63.998999999999995
    # in doubles, while the part kept is 63.999: inside its side to the millijoule)
    side_low_mj, side_high_mj = (
        (round(kept.energy_j * 1000) - round(kept.low_j * 1000)),
        (round(kept.high_j * 1000) - round(kept.energy_j * 1000)),
    )
    assert 0 <= kept.random_low_j <= figure.random_low_j and round(kept.random_low_j * 1000) <= side_low_mj
    assert (
        0 <= kept.random_high_j <= figure.random_high_j and round(kept.random_high_j * 1000) <= side_high_mj
    )
    margin = 1e-3 * (1 + 1e-9) + 1e-12 * energy  # one millijoule and the doubles' rounding
    assert kept.low_j >= min(figure.low_j - margin, kept.energy_j)  # no wider than a millijoule
    assert kept.high_j <= max(figure.high_j + margin, kept.energy_j)


def test_a_figure_with_a_term_that_is_not_finite_is_kept_as_it_is() -> None:
    figure = EnergyFigure(Kind.GPU, Source.ESTIMATED, 1.23456, 1.0, math.inf)
    assert figure.to_millijoules() is figure
