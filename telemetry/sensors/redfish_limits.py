"""What a BMC may report for a node: at most its power supplies' rating times a margin.

On 38e5f82 a BMC reporting 10^12 W over Redfish was accepted: 12 TJ and 2,300 t CO2e
in a "measurement valid" table. A reading is now checked before it is used: finite,
not negative, and at most the chassis' supply capacity (PowerSubsystem.CapacityWatts,
else the legacy Power resource's PowerSupplies[].PowerCapacityWatts summed) times
:data:`MARGIN`; without a rating, at most :data:`UNRATED_MAX_W`. A reading outside is a
failed read (a gap, named), never energy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from wattlog.errors import SensorError

MARGIN = 1.5
"""Supplies deliver up to their rating; inrush and a BMC's averaging stay well inside 1.5x."""
UNRATED_MAX_W = 200_000.0
"""No chassis a BMC reports draws more (a 72-GPU rack is ~130 kW)."""


@dataclass(frozen=True, slots=True)
class PowerLimit:
    """The most a chassis can draw, and where that number comes from."""

    max_w: float
    basis: str

    def check(self, uuid: str, power_w: float) -> None:
        """Raise SensorError unless `power_w` is a power this chassis can draw.

        Raises:
            SensorError: Not finite, negative, or above `max_w` (one line naming the bound).
        """
        if not math.isfinite(power_w) or power_w < 0 or power_w > self.max_w:
            raise SensorError(
                f"{uuid}: the BMC reported {power_w:g} W, outside 0..{self.max_w:g} W ({self.basis}): "
                "refused, recorded as a gap"
            )


def power_limit(chassis: dict[str, Any], get: Callable[[str], dict[str, Any]]) -> PowerLimit:
    """The chassis' limit from its supplies' rating (see the module docstring); never raises."""
    try:
        rating = _rating(chassis, get)
    except Exception:  # a BMC without (readable) supply data: the unrated bound holds
        rating = None
    if rating is None:
        return PowerLimit(UNRATED_MAX_W, "no supply rating from the BMC; the bound for any chassis")
    return PowerLimit(rating * MARGIN, f"supplies rated {rating:g} W x {MARGIN:g}")


def _rating(chassis: dict[str, Any], get: Callable[[str], dict[str, Any]]) -> float | None:
    subsystem = chassis.get("PowerSubsystem", {}).get("@odata.id")
    if subsystem:
        capacity = get(subsystem).get("CapacityWatts")
        if _positive(capacity):
            return float(capacity)
    legacy = chassis.get("Power", {}).get("@odata.id")
    if legacy:
        supplies = get(legacy).get("PowerSupplies") or []
        ratings = [s.get("PowerCapacityWatts") for s in supplies if isinstance(s, dict)]
        rated = [float(r) for r in ratings if _positive(r)]
        if rated and len(rated) == len(ratings):
            return sum(rated)
    return None


def _positive(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < math.inf


STEP_MJ = 2 * 3.6e6
"""Slack for a kWh counter's last digit (0.001 kWh = 3.6 kJ), twice: two roundings."""


def check_counter(
    uuid: str, limit: PowerLimit, last: tuple[float, float] | None, t_s: float, energy_mj: float
) -> None:
    """Raise SensorError if the energy counter rose faster than `limit` allows since `last` (t_s, mJ).

    Raises:
        SensorError: Not finite, negative, or a rise above max_w over the time since the last read.
    """
    if not math.isfinite(energy_mj) or energy_mj < 0:
        raise SensorError(f"{uuid}: the BMC reported an energy counter of {energy_mj:g} mJ: refused")
    if last is None or energy_mj <= last[1]:
        return  # a first read, or a counter that reset: the integrator handles resets
    allowed_mj = limit.max_w * 1000.0 * max(t_s - last[0], 0.0) + STEP_MJ
    rise_j = (energy_mj - last[1]) / 1000
    if energy_mj - last[1] > allowed_mj:
        raise SensorError(
            f"{uuid}: the BMC's energy counter rose {rise_j:g} J in {t_s - last[0]:g} s, "
            f"more than {limit.max_w:g} W allows ({limit.basis}): refused, recorded as a gap"
        )
