"""Fetched hours cached in the ledger: read back offline, merged run by run, a missing hour labelled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from tests.accounting.live.conftest import T0
from wattlog.accounting.carbon.catalog import load_series
from wattlog.accounting.carbon.intensity import HourlySeries, HourSplitter, IntensityRef
from wattlog.accounting.carbon.intensity.hours import iso_hour
from wattlog.accounting.carbon.intensity.live.cache import CachedIntensity, fetch_into_ledger
from wattlog.accounting.carbon.intensity.live.client import ProviderError
from wattlog.accounting.carbon.intensity.live.providers import ProviderContext
from wattlog.accounting.carbon.sites import Site
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.publishing.footprint import CarbonPath, LiveCarbon
from wattlog.errors import ConfigError

H = 3600
REF = IntensityRef("ukgrid", "", "GB")


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))


def _site() -> Site:
    return Site("gbdc", 1.2, 0.0, 1.29, 0.3, {"carbon_intensity_kg_per_kwh": "our grid average"}, "", REF)


def _serve_uk(httpserver: HTTPServer, grams_by_half: list[tuple[int, float | None]]) -> None:
    halves = [
        {
            "from": iso_hour(t),
            "to": iso_hour(t + 1800),
            "intensity": {"forecast": g, "actual": g, "index": "low"},
        }
        for t, g in grams_by_half
    ]
    httpserver.expect_request(f"/intensity/{iso_hour(T0)}/{iso_hour(T0 + 3 * H)}").respond_with_json(
        {"data": halves}
    )


def test_a_run_is_accounted_from_cached_hours_offline(
    httpserver: HTTPServer, context: Callable[..., ProviderContext], ledger: Ledger
) -> None:
    _serve_uk(httpserver, [(T0, 100), (T0 + 1800, 100), (T0 + H, 200), (T0 + H + 1800, 200)])
    report = fetch_into_ledger(ledger, REF, T0, T0 + 3 * H, context())
    assert (report.series, report.stored, report.missing) == ("ukgrid:GB", 2, (T0 + 2 * H,))
    httpserver.clear()  # offline from here on: the table reads the ledger only
    path = CarbonPath.of(_site(), ledger=ledger)
    by_hour = {T0: 1.0, T0 + H: 1.0, T0 + 2 * H: 1.0}  # MWh of IT energy in each hour
    # hand check: 1.2 x (1 x 0.1 + 1 x 0.2 + 1 x 0.3 [the site constant for the unfetched hour]) = 0.72 t
    assert path.co2_t(3.0, by_hour) == pytest.approx(0.72)
    intensity = path.intensity
    assert isinstance(intensity, CachedIntensity)
    assert intensity.fallback_hours == {T0 + 2 * H}
    assert "NESO carbon intensity API, zone GB, actual" in intensity.provenance_at(T0).source
    fallback = intensity.provenance_at(T0 + 2 * H)
    assert (
        fallback.estimated
        and "not fetched: the site's constant, 0.3 kg/kWh (our grid average)" in fallback.source
    )
    assert "2 hours cached; 1 hours from 2026-03-29T02:00Z not cached took 0.3 kg/kWh" in intensity.label


def test_live_figure_equals_the_table_for_the_same_hours(
    httpserver: HTTPServer, context: Callable[..., ProviderContext], ledger: Ledger
) -> None:
    _serve_uk(httpserver, [(T0, 100), (T0 + 1800, 100), (T0 + H, 200), (T0 + H + 1800, 200)])
    fetch_into_ledger(ledger, REF, T0, T0 + 3 * H, context())
    live = LiveCarbon(CarbonPath.of(_site(), ledger=ledger), HourSplitter(T0 + 1800))
    live.co2_t(T0 + H, 1.8e9)  # 0.5 MWh in each hour
    live.co2_t(T0 + 2 * H, 3.6e9)
    final = live.co2_t(T0 + 2 * H + 1800, 5.4e9)
    table = CarbonPath.of(_site(), ledger=ledger).co2_t(1.5, {T0: 0.5, T0 + H: 0.5, T0 + 2 * H: 0.5})
    assert final == table  # to the last digit


def test_live_figure_takes_hours_stored_after_the_run_started(
    httpserver: HTTPServer, context: Callable[..., ProviderContext], ledger: Ledger
) -> None:
    # nothing stored at start (hours are fetched as the run goes, or at its close)
    live = LiveCarbon(CarbonPath.of(_site(), ledger=ledger, live=True), HourSplitter(T0 + 1800))
    early = live.co2_t(T0 + H, 1.8e9)  # 0.5 MWh, read while the hour is not stored yet
    assert early == pytest.approx(0.5 * 1.2 * 0.3)  # the site's constant, labelled
    live.co2_t(T0 + 2 * H, 3.6e9)
    _serve_uk(httpserver, [(T0, 100), (T0 + 1800, 100), (T0 + H, 200), (T0 + H + 1800, 200)])
    fetch_into_ledger(ledger, REF, T0, T0 + 3 * H, context())  # stored mid-run
    final = live.co2_t(T0 + 2 * H + 1800, 5.4e9)  # a new hour appeared: the ledger is read again
    table = CarbonPath.of(_site(), ledger=ledger).co2_t(1.5, {T0: 0.5, T0 + H: 0.5, T0 + 2 * H: 0.5})
    assert final == table  # to the last digit: 1.2 x 0.5 x (0.1 + 0.2 + 0.3 [not fetched]) = 0.36 t
    assert table == pytest.approx(0.36)
    intensity = live.path.intensity
    assert isinstance(intensity, CachedIntensity) and intensity.fallback_hours == {T0 + 2 * H}


def test_a_live_cache_reads_the_ledger_once_per_new_hour(ledger: Ledger) -> None:
    reads: list[int] = []
    clock = [0.0]

    def reload() -> HourlySeries:
        reads.append(1)
        return HourlySeries({}, "empty")

    empty = HourlySeries({}, "empty")
    cached = CachedIntensity(empty, _site().intensity, reload=reload, now=lambda: clock[0])
    for _ in range(5):  # many log steps in one hour: one read
        cached.refresh([T0])
    cached.refresh([T0, T0 + H])  # a new hour
    clock[0] = 301.0  # stale: read again though no hour is new
    cached.refresh([T0, T0 + H])
    assert len(reads) == 3


def test_a_failed_fetch_stores_nothing(
    httpserver: HTTPServer, context: Callable[..., ProviderContext], ledger: Ledger
) -> None:
    httpserver.expect_request(f"/intensity/{iso_hour(T0)}/{iso_hour(T0 + H)}").respond_with_response(
        Response("{}", status=200, content_type="application/json")
    )
    with pytest.raises(ProviderError, match="expected"):
        fetch_into_ledger(ledger, REF, T0, T0 + H, context())
    intensity = CarbonPath.of(_site(), ledger=ledger).intensity
    assert isinstance(intensity, CachedIntensity) and not intensity.cached.kg_per_kwh_by_hour
    assert "not fetched yet: wattlog intensity fetch" in intensity.label


def test_fetches_merge_and_keep_the_estimated_mark(
    httpserver: HTTPServer, context: Callable[..., ProviderContext], ledger: Ledger
) -> None:
    halves = [
        {"from": iso_hour(T0), "to": iso_hour(T0 + 1800), "intensity": {"forecast": 100, "actual": None}},
        {"from": iso_hour(T0 + 1800), "to": iso_hour(T0 + H), "intensity": {"forecast": 100, "actual": None}},
    ]
    httpserver.expect_request(f"/intensity/{iso_hour(T0)}/{iso_hour(T0 + H)}").respond_with_json(
        {"data": halves}
    )
    fetch_into_ledger(ledger, REF, T0, T0 + H, context())
    _serve_uk(httpserver, [(T0 + H, 200), (T0 + H + 1800, 200)])
    fetch_into_ledger(ledger, REF, T0, T0 + 3 * H, context())
    stored = load_series(ledger, "ukgrid:GB")
    assert dict(stored.kg_per_kwh_by_hour) == {T0: 0.1, T0 + H: 0.2}
    assert stored.provenance[T0].estimated and not stored.provenance[T0 + H].estimated


def test_a_provider_site_needs_a_zone() -> None:
    with pytest.raises(ConfigError, match="needs a zone"):
        Site("x", 1.2, 0.0, 1.0, 0.3, intensity_source=IntensityRef("watttime"))
