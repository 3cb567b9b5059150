"""The cleanest window: given an hourly forecast, when to start a job of N hours.

A job of N whole hours at a steady IT power emits PUE x power x the sum of the N hours'
intensities; the cleanest start is the one with the least sum among the starts whose N
hours the forecast covers. What it saves is measured against starting at the first
forecast hour ("now").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError


@dataclass(frozen=True, slots=True)
class WindowChoice:
    """The cleanest start and what it saves against starting now.

    Attributes:
        start_s: Start of the cleanest window (Unix s, on the hour).
        hours: Its length.
        mean_kg_per_kwh: Its mean forecast intensity.
        now_start_s: The first forecast hour (starting "now").
        now_mean_kg_per_kwh: The mean intensity of the N hours from now.
        saved_t: Tonnes CO2e saved by waiting, for the job's power and PUE (None without a power).
    """

    start_s: int
    hours: int
    mean_kg_per_kwh: float
    now_start_s: int
    now_mean_kg_per_kwh: float
    saved_t: float | None

    @property
    def saved_fraction(self) -> float:
        """The share of the job's CO2 saved by waiting (0 when now is already the cleanest)."""
        if self.now_mean_kg_per_kwh <= 0:
            return 0.0
        return 1.0 - self.mean_kg_per_kwh / self.now_mean_kg_per_kwh


def cleanest_window(
    forecast: Mapping[int, float], hours: int, *, power_kw: float | None = None, pue: float = 1.0
) -> WindowChoice:
    """The start of the `hours` consecutive forecast hours with the least intensity.

    Args:
        forecast: Hour start (Unix s) -> forecast kg CO2e/kWh.
        hours: The job's length in whole hours (>= 1).
        power_kw: The job's steady IT power, kW (None: no tonnes, only intensities).
        pue: The site's PUE (facility energy per IT energy).

    Raises:
        ConfigError: `hours` < 1, or the forecast has no run of `hours` consecutive hours.
    """
    if hours < 1:
        raise ConfigError(f"a job lasts at least 1 hour, not {hours}")
    starts = sorted(forecast)
    sums = {
        s: sum(forecast[s + i * HOUR_S] for i in range(hours))
        for s in starts
        if all(s + i * HOUR_S in forecast for i in range(hours))
    }
    if not starts or starts[0] not in sums:
        raise ConfigError(
            f"the forecast ({len(starts)} hours) has no {hours} consecutive hours from its first: "
            "too short (or gapped) to place the job"
        )
    best = min(sums, key=lambda s: (sums[s], s))  # ties: the earliest
    now = starts[0]
    saved_t = None
    if power_kw is not None:
        saved_t = (sums[now] - sums[best]) * power_kw * pue / 1000.0  # kWh x kg/kWh -> kg -> t
    return WindowChoice(best, hours, sums[best] / hours, now, sums[now] / hours, saved_t)
