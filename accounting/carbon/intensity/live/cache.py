"""Fetched hours kept in the ledger, read back offline; an hour never fetched takes the site's figure.

A site names a provider and a zone (``[sites.NAME.intensity] source = "electricitymaps-api",
zone = "DE"``). ``wattlog intensity fetch`` (or a run's close) stores the run's hours in the
ledger under the series :func:`series_name`; tables read them from there, so a table renders
without the network and the same later. An hour the cache lacks (the provider had no figure,
or it was never fetched) takes the site's constant, and :meth:`CachedIntensity.provenance_at`
says so for that hour.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wattlog.accounting.carbon.grid_water import GridWater, water_series
from wattlog.accounting.carbon.intensity.base import (
    HourlySeries,
    HourProvenance,
    IntensityRef,
    IntensitySource,
    OpenContext,
    RegisteredSource,
)
from wattlog.accounting.carbon.intensity.hours import hour_start_s, iso_hour
from wattlog.accounting.carbon.intensity.live.client import hours_between
from wattlog.accounting.carbon.intensity.live.eia_api import EiaApi
from wattlog.accounting.carbon.intensity.live.providers import PROVIDERS, ProviderContext, open_provider
from wattlog.accounting.carbon.plausible import plausible_fetch
from wattlog.accounting.ranges import Quantity
from wattlog.errors import ConfigError, LedgerError

if TYPE_CHECKING:
    from wattlog.accounting.carbon.sites import Site
    from wattlog.accounting.ledger.store import Ledger


def series_name(ref: IntensityRef) -> str:
    """The stored series a provider's hours go to: the site's `series`, else "PROVIDER:ZONE"."""
    return ref.series or f"{ref.source}:{ref.zone}"


@dataclass(frozen=True, slots=True)
class FetchReport:
    """What one fetch stored.

    Attributes:
        series: The stored series' name.
        stored: Hours stored (added or refreshed).
        missing: Hour starts (Unix s) the provider did not give: they take the site's constant.
        water_stored: Hours of grid water stored (providers that give the fuel mix).
    """

    series: str
    stored: int
    missing: tuple[int, ...]
    water_stored: int = 0
    refused: str = ""
    """One line naming the hours refused as physically impossible ("" if none); they are missing."""


def fetch_into_ledger(
    ledger: Ledger,
    ref: IntensityRef,
    start_s: float,
    end_s: float,
    context: ProviderContext | None = None,
    site_wue_l_per_kwh: Quantity | None = None,
) -> FetchReport:
    """Fetch the hours of [start_s, end_s) from the provider `ref` names and store them in `ledger`.

    Nothing is stored when the provider fails: a bad answer raises before the ledger is touched.
    With `site_wue_l_per_kwh`, a provider that gives the fuel mix (eia-api) also stores the
    hours' grid water (:func:`water_series_name`), the site's WUE standing in for fuels without
    a factor.

    Raises:
        ConfigError: `ref` names no live provider, or its key is not in the environment.
        ProviderError: The provider refused, failed past its retries, or answered a wrong shape.
    """
    if not ref.zone:
        raise ConfigError(f"intensity source {ref.source!r} needs a zone ([sites.NAME.intensity] zone = ...)")
    provider = open_provider(ref.source, context)
    water = None
    if isinstance(provider, EiaApi) and site_wue_l_per_kwh is not None:
        mixes = provider.generation(ref.zone, start_s, end_s)  # one fetch gives carbon and water
        fetched = provider.from_mixes(ref.zone, hours_between(start_s, end_s), mixes)
        water = water_series(mixes, ref.zone, site_wue_l_per_kwh, fetched.series.origin)
    else:
        fetched = provider.history(ref.zone, start_s, end_s)
    fetched, refused = plausible_fetch(fetched)  # an impossible hour is never stored as valid
    from wattlog.accounting.carbon.catalog import save_series  # the ledger loads only when storing

    name = series_name(ref)
    stored = save_series(ledger, name, fetched.series) if fetched.series.kg_per_kwh_by_hour else 0
    water_stored = 0
    if water is not None and water.kg_per_kwh_by_hour:
        water_stored = save_series(ledger, water_series_name(ref), water)
    return FetchReport(name, stored, fetched.missing, water_stored, refused)


def water_series_name(ref: IntensityRef) -> str:
    """The stored series of a provider's grid water (L/kWh per hour), beside its intensity."""
    return f"water:{series_name(ref)}"


def open_grid_water(site: Site, ledger: Ledger | None) -> GridWater:
    """The site's grid water per hour cached in `ledger`; hours without a mix take the site's WUE."""
    ref = site.intensity_source
    wue, source = site.wue_offsite_l_per_kwh, site.source("wue_offsite_l_per_kwh")
    empty = HourlySeries({}, "no grid mix cached")
    if ledger is None or ref.source not in PROVIDERS:
        return GridWater(empty, wue, source)
    from wattlog.accounting.carbon.catalog import load_series

    try:
        return GridWater(load_series(ledger, water_series_name(ref)), wue, source)
    except LedgerError:
        return GridWater(empty, wue, source)


@dataclass(slots=True)
class CachedIntensity:
    """A provider's cached hours; an hour not cached takes the fallback (the site's figure), labelled.

    Read live (a run's logs as it goes), the run's hours are stored while it runs or at its
    close: with `reload`, :meth:`refresh` re-reads the ledger when an hour it lacks appears
    and then at most every `refresh_s`, so the live figure takes each stored hour as the
    table does (the same series, the same hours).

    Attributes:
        cached: The hours stored in the ledger, each with its provenance.
        fallback: The site's constant intensity.
        fallback_hours: Hour starts that took the fallback so far (filled as hours are asked for).
        reload: Reads the stored series again (None: the cache is read once, as tables read it).
        refresh_s: The least time between two re-reads while no new hour appears.
        now: Monotonic seconds (tests pass a fake).
    """

    cached: HourlySeries
    fallback: IntensitySource
    fallback_hours: set[int] = field(default_factory=set)
    reload: Callable[[], HourlySeries] | None = None
    refresh_s: float = 300.0
    now: Callable[[], float] = time.monotonic
    _asked: set[int] = field(default_factory=set)
    _reloaded_s: float | None = None

    @property
    def label(self) -> str:
        """The cached series, and the hours that took the site's constant once any did (as tables read it)."""
        n = len(self.cached.kg_per_kwh_by_hour)
        origin = self.cached.origin or "no hours cached"
        if not self.fallback_hours:
            return f"{origin} ({n} hours cached; an hour not cached takes {self.fallback.label})"
        first, count = iso_hour(min(self.fallback_hours)), len(self.fallback_hours)
        return (
            f"{origin} ({n} hours cached; {count} hours from {first} not cached took {self.fallback.label})"
        )

    @property
    def constant_kg_per_kwh(self) -> None:
        """None: the intensity changes by the hour."""
        return None

    def kg_per_kwh_at(self, t_s: float) -> Quantity:
        """The cached hour's intensity, else the fallback's (and the hour is noted)."""
        hour = hour_start_s(t_s)
        value = self.cached.kg_per_kwh_by_hour.get(hour)
        if value is not None:
            return value
        self.fallback_hours.add(hour)
        return self.fallback.kg_per_kwh_at(t_s)

    def refresh(self, hours: Iterable[int]) -> None:
        """Before a live figure: re-read the ledger if one of `hours` is not cached and is new or stale.

        A re-read happens when an hour appears that was never asked for, or `refresh_s` after
        the last one, so a run's live logs cost one ledger read per hour, not one per log step.
        """
        wanted = set(hours)
        new, self._asked = wanted - self._asked, self._asked | wanted
        if self.reload is None or wanted <= set(self.cached.kg_per_kwh_by_hour):
            return
        now = self.now()
        if not new and self._reloaded_s is not None and now - self._reloaded_s < self.refresh_s:
            return
        self._reloaded_s = now
        try:
            self.cached = self.reload()
        except LedgerError:  # the ledger briefly unreachable: keep what was read, try again later
            return
        self.fallback_hours -= set(self.cached.kg_per_kwh_by_hour)

    def provenance_at(self, t_s: float) -> HourProvenance:
        """Where the hour containing `t_s` comes from; a fallback hour is marked estimated."""
        hour = hour_start_s(t_s)
        found = self.cached.provenance.get(hour)
        if found is not None:
            return found
        return HourProvenance(f"not fetched: the site's constant, {self.fallback.label}", estimated=True)


def open_cached(ref: IntensityRef, context: OpenContext) -> CachedIntensity:
    """The hours of `ref`'s provider cached in the context's ledger, falling back to the site's constant.

    Raises:
        ConfigError: No site constant to fall back to.
    """
    if context.constant is None:
        raise ConfigError(f"intensity source {ref.describe()!r} belongs to a site: name a site")
    empty = HourlySeries({}, f"no ledger to read {series_name(ref)} from")
    ledger = context.ledger
    if ledger is None:
        return CachedIntensity(empty, context.constant)
    from wattlog.accounting.carbon.catalog import load_series  # the ledger loads only for these sites

    def read() -> HourlySeries:
        return load_series(ledger, series_name(ref))

    try:
        cached = read()
    except LedgerError:
        cached = HourlySeries(
            {}, f"ledger series {series_name(ref)} (not fetched yet: wattlog intensity fetch)"
        )
    return CachedIntensity(cached, context.constant, reload=read if context.live else None)


SOURCES: tuple[RegisteredSource, ...] = tuple(
    RegisteredSource(name, f"{what}, fetched into the ledger", open_cached, fetches=True)
    for name, (what, _) in PROVIDERS.items()
)
"""One registry entry per live provider."""
