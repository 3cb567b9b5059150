"""Values from a grid provider checked against physics before they are stored.

On 38e5f82 a provider's negative gas generation went into an hour's mix silently
(storing 0.011 kg/kWh), and any intensity a provider sent was stored as valid. Now an
hour whose intensity is outside 0..2 kg CO2e/kWh (coal, the dirtiest fuel, is ~1.0), or
whose mix has a fuel other than storage generating less than nothing, is refused: it is
not stored, it stays missing (so it takes the site's constant, labelled), and one note
names how many hours and why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from wattlog.accounting.carbon.intensity.base import HourlySeries
from wattlog.accounting.carbon.intensity.live.client import Fetch

MAX_KG_PER_KWH = 2.0
"""No grid emits more (IPCC AR5's coal median is 0.82 kg/kWh; lignite about 1.1)."""
STORAGE_FUELS = frozenset({"Hydropower and Pumped Storage"})
"""Fuels whose net generation may be negative (pumping, charging)."""


def implausible_intensity(kg_per_kwh: float) -> str | None:
    """Why an hour's intensity cannot be, or None."""
    if not math.isfinite(kg_per_kwh) or not 0.0 <= kg_per_kwh <= MAX_KG_PER_KWH:
        return f"intensity {kg_per_kwh:g} kg/kWh outside 0..{MAX_KG_PER_KWH:g}"
    return None


def implausible_mix(generation_mw: Mapping[str, float]) -> str | None:
    """Why an hour's generation by fuel cannot be (a fuel other than storage below 0), or None."""
    for fuel, mw in generation_mw.items():
        if fuel not in STORAGE_FUELS and (not math.isfinite(mw) or mw < 0):
            return f"{fuel} generation {mw:g} MW"
    return None


def plausible_fetch(fetch: Fetch) -> tuple[Fetch, str]:
    """`fetch` without its implausible hours (moved to missing), and a note naming them ("" if none)."""
    series = fetch.series
    refused = {
        hour: why for hour, kg in series.kg_per_kwh_by_hour.items() if (why := implausible_intensity(kg))
    }
    if not refused:
        return fetch, ""
    kept = HourlySeries(
        {h: kg for h, kg in series.kg_per_kwh_by_hour.items() if h not in refused},
        series.origin,
        {h: p for h, p in series.provenance.items() if h not in refused},
    )
    missing = tuple(sorted({*fetch.missing, *refused}))
    return replace(fetch, series=kept, missing=missing), refusal_note(series.origin, list(refused.values()))


def refusal_note(origin: str, reasons: Sequence[str]) -> str:
    """One line: how many hours of `origin` were refused, and the first reason."""
    return (
        f"{origin}: {len(reasons)} hour(s) refused as physically impossible ({reasons[0]}); "
        "they take the site's constant, labelled"
    )
