"""User sites and carbon-intensity series kept in the ledger, so every reader sees the same figures.

A site reads a stored series back through the intensity registry (its source "ledger",
its series the stored name: :mod:`wattlog.accounting.carbon.intensity.stored`), each hour
with the source it was stored with.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, select
from sqlmodel import col

from wattlog.accounting.carbon.intensity.base import HourlySeries, HourProvenance
from wattlog.accounting.ledger.models import IntensityPoint, SiteRecord
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError, LedgerError

ESTIMATED_MARK = " [estimated]"
"""Appended to a stored hour's source when its provider marked it estimated or forecast."""


def save_site(ledger: Ledger, name: str, definition: Mapping[str, Any], source: str = "") -> None:
    """Store (or replace) a user site: its fields as in a sites TOML table, and their source."""
    if not name.strip():
        raise ConfigError("a site needs a non-empty name")
    with ledger.transaction(f"save site {name!r}") as session:
        session.merge(SiteRecord(name=name.strip().lower(), definition=dict(definition), source=source))


def stored_sites(ledger: Ledger) -> dict[str, SiteRecord]:
    """The sites stored in the ledger, by name."""
    with ledger.transaction("read sites") as session:
        return {s.name: s for s in session.execute(select(SiteRecord)).scalars()}


def save_intensity(
    ledger: Ledger, series: str, kg_per_kwh_by_hour: Mapping[int, float], source: str = ""
) -> int:
    """Store an hourly series (hour start, Unix s -> kg CO2e/kWh), replacing any of that name whole.

    Raises:
        ConfigError: An empty name, an hour not on the hour, or a negative or non-finite value.
    """
    _check_points(series, kg_per_kwh_by_hour)
    with ledger.transaction(f"save intensity series {series!r}") as session:
        session.execute(delete(IntensityPoint).where(col(IntensityPoint.series) == series))
        session.add_all(
            IntensityPoint(series=series, hour=h // HOUR_S, kg_per_kwh=v, source=source)
            for h, v in sorted(kg_per_kwh_by_hour.items())
        )
    return len(kg_per_kwh_by_hour)


def save_series(ledger: Ledger, series: str, fetched: HourlySeries) -> int:
    """Add (or refresh) the hours of `fetched` in stored series `series`, each with its own provenance.

    Hours already stored and absent from `fetched` stay as they were: a cache of fetched hours
    grows run by run. An hour the provider marked estimated keeps that mark.

    Raises:
        ConfigError: An empty name, an hour not on the hour, or a negative or non-finite value.
    """
    _check_points(series, fetched.kg_per_kwh_by_hour)
    with ledger.transaction(f"save intensity series {series!r}") as session:
        for hour_s, value in sorted(fetched.kg_per_kwh_by_hour.items()):
            where = fetched.provenance.get(hour_s)
            source = (where.source + (ESTIMATED_MARK if where.estimated else "")) if where else fetched.origin
            session.merge(
                IntensityPoint(series=series, hour=hour_s // HOUR_S, kg_per_kwh=value, source=source)
            )
    return len(fetched.kg_per_kwh_by_hour)


def _check_points(series: str, kg_per_kwh_by_hour: Mapping[int, float]) -> None:
    if not series.strip():
        raise ConfigError("an intensity series needs a name")
    for hour_s, value in kg_per_kwh_by_hour.items():
        if hour_s % HOUR_S:
            raise ConfigError(f"series {series!r}: {hour_s} is not the start of an hour")
        if not (math.isfinite(value) and value >= 0):
            raise ConfigError(f"series {series!r}: intensity {value} at {hour_s} must be finite and >= 0")


def load_intensity(ledger: Ledger, series: str) -> dict[int, float]:
    """A stored series as hour start (Unix s) -> kg CO2e/kWh.

    Raises:
        LedgerError: No series of that name.
    """
    return dict(load_series(ledger, series).kg_per_kwh_by_hour)


def load_series(ledger: Ledger, series: str) -> HourlySeries:
    """A stored series as an intensity source, each hour keeping the source it was stored with.

    Raises:
        LedgerError: No series of that name.
    """
    with ledger.transaction(f"read intensity series {series!r}") as session:
        query = select(IntensityPoint).where(col(IntensityPoint.series) == series)
        points = session.execute(query.order_by(col(IntensityPoint.hour))).scalars().all()
    if not points:
        raise LedgerError(f"intensity series {series!r} is not in the ledger: store it first")
    values = {p.hour * HOUR_S: p.kg_per_kwh for p in points}
    provenance = {p.hour * HOUR_S: _provenance(p.source) for p in points}
    sources = sorted({_provenance(p.source).source for p in points if p.source})
    named = "; ".join(sources) if len(sources) <= 2 else f"{sources[0]}; and {len(sources) - 1} other sources"
    origin = f"ledger series {series}" + (f" ({named})" if sources else "")
    return HourlySeries(values, origin, provenance)


def _provenance(stored: str) -> HourProvenance:
    """A stored hour's provenance: its source, and the estimated mark :func:`save_series` wrote."""
    if stored.endswith(ESTIMATED_MARK):
        return HourProvenance(stored[: -len(ESTIMATED_MARK)], estimated=True)
    return HourProvenance(stored or "unsourced")
