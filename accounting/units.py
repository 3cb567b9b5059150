"""Unit conversions, each with its units in its name.

They accept a float or a :class:`~wattlog.accounting.ranges.Range` and return the same
kind. The two products the footprint rests on need no conversion at all:
MWh x kg/kWh = t, and MWh x L/kWh = kL.

>>> j_to_kwh(3.6e6)
1.0
>>> j_to_mwh(7.2e9)
2.0
>>> kwh_to_mwh(1500.0)
1.5
"""

from __future__ import annotations

import math
from typing import TypeVar

from wattlog.accounting.ranges import Range

HOUR_S = 3600
"""Seconds in an hour: the one definition every hour key, rollup and intensity hour uses."""

J_PER_KWH = 3.6e6
"""Joules in one kilowatt-hour."""
KWH_PER_MWH = 1000.0
"""Kilowatt-hours in one megawatt-hour."""

Q = TypeVar("Q", float, Range)


def j_to_kwh(energy_j: Q) -> Q:
    """Joules to kilowatt-hours.

    >>> j_to_kwh(Range(0.0, 7.2e6))
    Range(lo=0.0, hi=2.0)
    """
    return energy_j / J_PER_KWH


def j_to_mwh(energy_j: Q) -> Q:
    """Joules to megawatt-hours."""
    return energy_j / (J_PER_KWH * KWH_PER_MWH)


def mwh_of(energy_j: float | Range | None) -> float | Range | None:
    """Joules in the paper's unit, MWh, where a cell or an export prints them; None stays None.

    >>> mwh_of(7.2e9), mwh_of(None)
    (2.0, None)
    """
    if energy_j is None:
        return None
    return j_to_mwh(energy_j) if isinstance(energy_j, Range) else j_to_mwh(float(energy_j))


def kwh_to_j(energy_kwh: Q) -> Q:
    """Kilowatt-hours to joules.

    >>> kwh_to_j(1.0)
    3600000.0
    """
    return energy_kwh * J_PER_KWH


def mwh_to_j(energy_mwh: Q) -> Q:
    """Megawatt-hours to joules."""
    return energy_mwh * (J_PER_KWH * KWH_PER_MWH)


def kwh_to_mwh(energy_kwh: Q) -> Q:
    """Kilowatt-hours to megawatt-hours."""
    return energy_kwh / KWH_PER_MWH


def mwh_to_kwh(energy_mwh: Q) -> Q:
    """Megawatt-hours to kilowatt-hours.

    >>> mwh_to_kwh(0.25)
    250.0
    """
    return energy_mwh * KWH_PER_MWH


def kg_to_t(mass_kg: Q) -> Q:
    """Kilograms to metric tonnes.

    >>> kg_to_t(52_000.0)
    52.0
    """
    return mass_kg / 1000.0


def t_to_kg(mass_t: Q) -> Q:
    """Metric tonnes to kilograms."""
    return mass_t * 1000.0


def l_to_kl(volume_l: Q) -> Q:
    """Litres to kilolitres.

    >>> l_to_kl(202_000.0)
    202.0
    """
    return volume_l / 1000.0


def kl_to_l(volume_kl: Q) -> Q:
    """Kilolitres to litres."""
    return volume_kl * 1000.0


# Readable figures: one helper for every place a person reads an amount.

_LADDERS: dict[str, tuple[tuple[str, float], ...]] = {
    # quantity -> (unit, size in the base unit), smallest first; base units: J, g, L, W, W/s.
    "energy": (("J", 1.0), ("Wh", 3600.0), ("kWh", 3.6e6), ("MWh", 3.6e9)),
    "mass": (("ug", 1e-6), ("mg", 1e-3), ("g", 1.0), ("kg", 1e3), ("t", 1e6)),
    "volume": (("uL", 1e-6), ("mL", 1e-3), ("L", 1.0), ("kL", 1e3)),  # a short run's water: 0.748 uL
    "power": (("W", 1.0), ("kW", 1e3), ("MW", 1e6)),
    "ramp": (("W/s", 1.0), ("kW/s", 1e3), ("MW/s", 1e6)),
    "count": (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12), ("P", 1e15)),
}
"""The units a reader sees, by quantity: J, Wh, kWh, MWh; ug, mg, g, kg, t; uL, mL, L, kL."""


def sig3(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant figures, positional (never scientific), thousands separated.

    >>> sig3(1234.5), sig3(0.000000138), sig3(0.5), sig3(0.0), sig3(12.0)
    ('1,230', '0.000000138', '0.500', '0', '12.0')
    """
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    exponent = math.floor(math.log10(abs(value)))
    places = digits - 1 - exponent  # negative: round to tens, hundreds, ...
    rounded = round(value, places)
    if rounded and math.floor(math.log10(abs(rounded))) > exponent:  # 999.6 -> 1,000: one place fewer
        places -= 1
    return f"{rounded:,.{max(places, 0)}f}"


_SIX_DIGITS = 1e6
"""Counts from here on read with an SI prefix: 2.17 G, not 2,167,619,048."""

_FROM = {"Wh": 0.1}
"""Units used from a fraction of themselves: Wh from 0.1 Wh (360 J), where joules would read in thousands."""


def _unit(value: float, quantity: str) -> tuple[str, float]:
    ladder = _LADDERS[quantity]
    unit, size = ladder[0]
    for candidate, candidate_size in ladder:
        # 0.9995: 999.96 g reads as 1.00 kg, not "1,000 g".
        if abs(value) >= candidate_size * _FROM.get(candidate, 1.0) * 0.9995:
            unit, size = candidate, candidate_size
    return unit, size


def unit_for(value: float, quantity: str) -> tuple[str, float]:
    """The unit `readable` picks for `value` and its size in the base unit: a chart's axis in one unit.

    >>> unit_for(1.3e6, "power"), unit_for(4.0e10, "energy")
    (('MW', 1000000.0), ('MWh', 3600000000.0))
    """
    return _unit(value, quantity)


def readable(value: float, quantity: str) -> str:
    """An amount in the unit of its magnitude, 3 significant figures: "1.80 kWh", "412 g", "3.20 kL".

    Args:
        value: In the quantity's base unit: joules ("energy"), grams ("mass") or litres ("volume").
        quantity: "energy", "mass", "volume", "power" (W) or "ramp" (W/s).

    >>> readable(7.2e6, "energy"), readable(950.0, "mass"), readable(1500.0, "volume")
    ('2.00 kWh', '950 g', '1.50 kL')
    >>> readable(0.0, "energy"), readable(72.9, "energy"), readable(550.0, "energy")
    ('0 J', '72.9 J', '0.153 Wh')
    """
    unit, size = _unit(value, quantity)
    return f"{sig3(value / size)} {unit}"


def readable_count(value: float) -> str:
    """A count (requests served, break-even requests): whole up to six digits, beyond them an SI prefix.

    Tokens alone are printed exact (column_units.exact_count): the papers publish them so.

    >>> readable_count(2_167_619_048.4), readable_count(48_000.4), readable_count(1.5e13)
    ('2.17 G', '48,000', '15.0 T')
    """
    if abs(value) < _SIX_DIGITS:
        return f"{value:,.0f}"
    unit, size = _unit(value, "count")
    return f"{sig3(value / size)} {unit}"


def readable_range(lo: float, hi: float, quantity: str) -> str:
    """A (min, max) amount in one unit chosen by the max: "1.29 - 4.26 kL"; one figure when equal."""
    unit, size = _unit(hi, quantity)
    low, high = sig3(lo / size), sig3(hi / size)
    return f"{low} {unit}" if low == high else f"{low} - {high} {unit}"


def readable_energy_mwh(mwh: float) -> str:
    """Energy given in MWh, read as J, Wh, kWh or MWh."""
    return readable(mwh_to_j(mwh), "energy")


def readable_co2_t(tonnes: float) -> str:
    """Emissions given in tonnes CO2e, read as g, kg or t (CO2e)."""
    return readable(tonnes * 1e6, "mass") + " CO2e"


def readable_water_kl(kl: float) -> str:
    """Water given in kL, read as L or kL."""
    return readable(kl * 1e3, "volume")
