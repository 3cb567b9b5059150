"""Sites and intensity series stored in the ledger."""

from __future__ import annotations

import pytest

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.catalog import load_intensity, save_intensity, save_site, stored_sites
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
