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

from typing import TypeVar

from wattlog.accounting.ranges import Range

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
