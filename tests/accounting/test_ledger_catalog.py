"""Sites and intensity series stored in the ledger."""

from __future__ import annotations

import pytest

from wattlog.accounting.carbon.catalog import load_intensity, save_intensity, save_site, stored_sites
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.errors import ConfigError, LedgerError


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))


def test_sites_round_trip_and_replace(ledger: Ledger) -> None:
    save_site(ledger, "MyLab", {"pue": 1.3, "wue_offsite_l_per_kwh": [1.2, 3.4]}, source="facility report")
    save_site(ledger, "mylab", {"pue": 1.25}, source="2026 report")
    [site] = stored_sites(ledger).values()
    assert (site.name, site.definition, site.source) == ("mylab", {"pue": 1.25}, "2026 report")


def test_intensity_series_round_trip_replaces_whole(ledger: Ledger) -> None:
    assert save_intensity(ledger, "ercot", {7200: 0.4, 3600: 0.3}, source="grid operator") == 2
    assert load_intensity(ledger, "ercot") == {3600: 0.3, 7200: 0.4}
    save_intensity(ledger, "ercot", {10800: 0.2})
    assert load_intensity(ledger, "ercot") == {10800: 0.2}


@pytest.mark.parametrize(
    ("points", "match"),
    [({3601: 0.1}, "not the start of an hour"), ({3600: -0.1}, "must be finite and >= 0")],
)
def test_bad_series_writes_nothing(ledger: Ledger, points: dict[int, float], match: str) -> None:
    save_intensity(ledger, "s", {0: 0.5})
    with pytest.raises(ConfigError, match=match):
        save_intensity(ledger, "s", points)
    assert load_intensity(ledger, "s") == {0: 0.5}


def test_missing_series_is_a_clear_error(ledger: Ledger) -> None:
    with pytest.raises(LedgerError, match="series 'nope' is not in the ledger"):
        load_intensity(ledger, "nope")


def test_a_site_reads_a_stored_series_back_through_the_registry(ledger: Ledger, tmp_path) -> None:
    from wattlog.accounting.carbon.sites import load_sites
    from wattlog.accounting.publishing.run_table import TableOptions, run_footprint
    from wattlog.records import EnergyInterval, Kind, Source

    h0 = 1_767_225_600
    save_intensity(ledger, "ercot-2026", {h0: 0.5, h0 + 3600: 0.1}, source="ERCOT fuel mix 2026")
    sites = tmp_path / "sites.toml"
    sites.write_text(
        "[sites.texas]\npue = 1.2\nwue_onsite_l_per_kwh = 0\nwue_offsite_l_per_kwh = 1.29\n"
        "carbon_intensity_kg_per_kwh = 0.4\n"
        '[sites.texas.intensity]\nsource = "ledger"\nseries = "ercot-2026"\n',
        encoding="utf-8",
    )
    site = load_sites(sites)["texas"]
    series = site.open_intensity(ledger)
    assert series.label == "hourly intensity from ledger series ercot-2026 (ERCOT fuel mix 2026)"
    run = ledger.start_run("r", RunSpec(site="texas"))
    rows = [
        EnergyInterval.of("h", "GPU-0", Kind.GPU, Source.COUNTER, h0 + 3600 * i, h0 + 3600 * (i + 1), j, j, j)
        for i, j in enumerate([3.6e9, 7.2e9])
    ]
    ledger.record_intervals(run.id, rows)  # type: ignore[arg-type]
    found = run_footprint(ledger, ledger.get_run("r"), TableOptions(catalog={"texas": site}))
    assert found is not None and found.co2_t == pytest.approx(1.2 * (1 * 0.5 + 2 * 0.1))
    with pytest.raises(ConfigError, match="stored in a ledger"):
        site.open_intensity()
