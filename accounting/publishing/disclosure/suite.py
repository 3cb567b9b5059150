"""The reproduction suite: published figures recomputed by wattlog's own code (data/reproduction.toml).

Each row names its inputs and output as printed. A row is reproduced within 0.5 % (or within
half the published figure's last digit, where that is coarser: 0.0132 printed "0.013") where
every input carries three or more significant figures; otherwise within its rounding: the
interval the inputs' printed precision allows overlaps the published figure +- half its
last digit. A row marked ``expect = "differs"`` is a known published fault: it must still
differ, and is shown, not counted as reproduced.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from wattlog.accounting.publishing.disclosure.estimate import Draw, Hours, estimate
from wattlog.accounting.publishing.footprint import co2_t, water_kl
from wattlog.accounting.ranges import midpoint
from wattlog.errors import ConfigError

RELATIVE_LIMIT = 0.005
EXACT_FIGURES = 99
"""The figures an exact input counts as (it never lowers a row to the rounding rule)."""
_SUFFIX = {"k": 1e3, "M": 1e6, "B": 1e9}
_PRINTED = re.compile(r"^(-?)([0-9][0-9,]*)(?:\.([0-9]+))?([kMB]?)$")


@dataclass(frozen=True, slots=True)
class Printed:
    """A number as printed: its value, significant figures and half its last digit."""

    text: str
    value: float
    figures: int
    half_unit: float

    @classmethod
    def of(cls, text: str) -> Printed:
        """Parse "1,022", "1.46M", "0.385", "830k".

        Raises:
            ConfigError: Not a printed number.
        """
        match = _PRINTED.match(text.strip())
        if match is None:
            raise ConfigError(f"reproduction suite: {text!r} is not a printed number")
        sign, whole, decimals, suffix = match.groups()
        whole, decimals = whole.replace(",", ""), decimals or ""
        scale = _SUFFIX.get(suffix, 1.0)
        digits = (whole + decimals).lstrip("0") or "0"
        value = float(f"{sign}{whole}.{decimals or 0}") * scale
        return cls(text, value, len(digits), 0.5 * 10.0 ** -len(decimals) * scale)

    @classmethod
    def exact_of(cls, text: str) -> Printed:
        """A stated constant or a count ("PUE 1.1" as a card defines it, "8" GPUs): no rounding."""
        printed = cls.of(text)
        return cls(text, printed.value, EXACT_FIGURES, 0.0)

    @property
    def bounds(self) -> tuple[float, float]:
        """What the printed figure may have been before rounding."""
        return self.value - self.half_unit, self.value + self.half_unit


@dataclass(frozen=True, slots=True)
class SuiteRow:
    """One published figure with its inputs, how wattlog recomputes it, and where it was printed."""

    key: str
    model: str
    figure: str
    method: str
    unit: str
    inputs: Mapping[str, Any]
    published: Printed
    source: str
    expect_differs: bool = False

    exact: frozenset[str] = frozenset()

    def printed_inputs(self) -> dict[str, Printed | list[Printed]]:
        """Every input parsed (lists stay lists); an `exact` one carries no rounding."""
        found: dict[str, Printed | list[Printed]] = {}
        for key, raw in self.inputs.items():
            parse = Printed.exact_of if key in self.exact else Printed.of
            found[key] = [parse(p) for p in raw] if isinstance(raw, list) else parse(raw)
        return found


def _card(unit: str, x: Mapping[str, Any]) -> float:
    hours = x["gpu_hours"] if "gpu_hours" in x else x["gpus"] * x["days"] * 24.0
    draw = Draw(x["draw_w"], x["draw_w"], x["draw_w"], "published")
    found = estimate(
        Hours(hours, hours, hours, "published"),
        draw,
        pue=x.get("pue"),
        intensity_kg_per_kwh=x.get("intensity_kg_per_kwh"),
    )
    if unit == "t":
        assert found.co2_t is not None, "a card row in tonnes names its intensity"
        return found.co2_t[0]
    mwh = found.energy[-1].mwh
    return mwh * 1000.0 if unit == "kWh" else mwh


_METHODS: dict[str, Callable[[str, Mapping[str, Any]], float]] = {
    "card": _card,
    "co2": lambda _, x: midpoint(co2_t(x["energy_mwh"], x["pue"], x["intensity_kg_per_kwh"])),
    "water": lambda _, x: midpoint(water_kl(x["energy_mwh"], x["pue"], 0.0, x["wue_l_per_kwh"])),
    "sum": lambda _, x: sum(x["parts"]),
    "quotient": lambda _, x: x["numerator"] / _product(x["denominator"]),
}


def _product(values: Sequence[float]) -> float:
    out = 1.0
    for value in values:
        out *= value
    return out


@dataclass(frozen=True, slots=True)
class Reproduced:
    """A row's verdict: the figure wattlog computes, its interval from the inputs' rounding, the rule."""

    row: SuiteRow
    value: float
    low: float
    high: float
    rule: str
    within: bool

    @property
    def difference(self) -> float:
        """(reproduced - published) / published."""
        return (self.value - self.row.published.value) / self.row.published.value

    @property
    def ok(self) -> bool:
        """Reproduced as expected: within its rule, or (a known fault) still outside it."""
        return self.within != self.row.expect_differs


def reproduce(row: SuiteRow) -> Reproduced:
    """Recompute `row` and judge it by its rule.

    Raises:
        ConfigError: An unknown method or missing input.
    """
    if row.method not in _METHODS:
        raise ConfigError(f"reproduction suite row {row.key}: unknown method {row.method!r}")
    method = _METHODS[row.method]
    printed = row.printed_inputs()
    flat = [p for v in printed.values() for p in (v if isinstance(v, list) else [v])]
    value = method(row.unit, _values(printed, lambda p: p.value))
    corners = [method(row.unit, dict(zip(printed, combo, strict=True))) for combo in _corners(printed)]
    low, high = min(corners), max(corners)
    published = row.published
    if min(p.figures for p in flat) >= 3:
        gap = abs(value - published.value)
        coarser = published.half_unit > RELATIVE_LIMIT * abs(
            published.value
        )  # "0.013": its last digit is > 0.5 %
        rule = "within its last digit" if coarser else "within 0.5 %"
        within = gap <= max(RELATIVE_LIMIT * abs(published.value), published.half_unit)
    else:
        rule = "within rounding"
        lo, hi = published.bounds
        within = low <= hi and lo <= high
    return Reproduced(row, value, low, high, rule, within)


def _values(
    printed: Mapping[str, Printed | list[Printed]], pick: Callable[[Printed], float]
) -> dict[str, Any]:
    return {k: [pick(p) for p in v] if isinstance(v, list) else pick(v) for k, v in printed.items()}


def _corners(printed: Mapping[str, Printed | list[Printed]]) -> list[tuple[Any, ...]]:
    """Every input at either end of its rounding (the methods are monotone in each input)."""
    options: list[list[Any]] = []
    for value in printed.values():
        if isinstance(value, list):
            options.append([list(c) for c in itertools.product(*(p.bounds for p in value))])
        else:
            options.append(list(value.bounds))
    return list(itertools.product(*options))


def suite_rows(text: str | None = None) -> list[SuiteRow]:
    """The suite's rows (default: the built-in data/reproduction.toml).

    Raises:
        ConfigError: A row misses a field.
    """
    if text is None:
        path = resources.files("wattlog.accounting").joinpath("data/reproduction.toml")
        text = path.read_text(encoding="utf-8")
    rows = []
    for raw in tomllib.loads(text)["rows"]:
        try:
            rows.append(
                SuiteRow(
                    raw["key"],
                    raw["model"],
                    raw["figure"],
                    raw["method"],
                    raw["unit"],
                    raw["inputs"],
                    Printed.of(raw["published"]),
                    raw["source"],
                    raw.get("expect") == "differs",
                    frozenset(raw.get("exact", ())),
                )  # fmt: skip
            )
        except KeyError as missing:
            raise ConfigError(f"reproduction suite row {raw.get('key', '?')}: missing {missing}") from None
    return rows
