"""Range arithmetic and parsing: (min, max) propagate, bad ranges are one-line ConfigErrors."""

from __future__ import annotations

import pytest

from wattlog.accounting.ranges import Range, bounds, check_at_least, format_quantity, parse_quantity
from wattlog.errors import ConfigError


def test_min_above_max_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="min 4.26 is above max 1.29"):
        Range(4.26, 1.29)


def test_arithmetic_propagates_min_and_max() -> None:
    r = Range(1.0, 2.0)
    assert r + 1 == Range(2.0, 3.0)
    assert 1 + r == Range(2.0, 3.0)
    assert r * Range(3.0, 4.0) == Range(3.0, 8.0)
    assert 2 * r == Range(2.0, 4.0)
    assert r - Range(0.5, 1.0) == Range(0.0, 1.5)
    assert r * -1 == Range(-2.0, -1.0)
    assert r / 2 == Range(0.5, 1.0)
    assert 4 / r == Range(2.0, 4.0)


def test_division_by_a_range_holding_zero_is_refused() -> None:
    with pytest.raises(ConfigError, match="contains 0"):
        Range(1.0, 2.0) / Range(-1.0, 1.0)


def test_exact_and_formatting() -> None:
    assert Range.exact(3.0).is_exact
    assert Range.of(2.5) == Range(2.5, 2.5)
    assert bounds(2.0) == (2.0, 2.0)
    assert format_quantity(Range(105.006, 346.764), ".0f") == "105-347"
    assert format_quantity(1.2, "g") == "1.2"
    assert Range(1.0, 3.0).mid == 2.0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (1, 1.0),
        (0.332, 0.332),
        ([1.29, 4.26], Range(1.29, 4.26)),
        ({"min": 1, "max": 2}, Range(1.0, 2.0)),
        ("1.29-4.26", Range(1.29, 4.26)),
        ("3.10", 3.1),
    ],
)
def test_parse_quantity_shapes(raw: object, expected: object) -> None:
    assert parse_quantity(raw, "x") == expected


@pytest.mark.parametrize("raw", [True, "abc", [1, 2, 3], {"lo": 1}, None])
def test_parse_quantity_rejects_other_shapes(raw: object) -> None:
    with pytest.raises(ConfigError, match="expected a number or a range"):
        parse_quantity(raw, "site 'x': pue")


def test_parse_quantity_names_the_field_for_min_above_max() -> None:
    with pytest.raises(ConfigError, match=r"^site 'x': pue: range min 2 is above max 1"):
        parse_quantity([2, 1], "site 'x': pue")


def test_check_at_least_checks_the_low_end() -> None:
    check_at_least(Range(1.0, 2.0), 1.0, "PUE", "why")
    with pytest.raises(ConfigError, match="PUE is 0.9-2, below 1: why"):
        check_at_least(Range(0.9, 2.0), 1.0, "PUE", "why")
    with pytest.raises(ConfigError, match="finite"):
        check_at_least(float("nan"), 0.0, "x", "why")
