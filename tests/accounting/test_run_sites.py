"""A run keeps the site figures it was accounted with; a catalog edit changes no stored run (issue 38).

On 38e5f82 the ledger stored only the site's name: editing sites.toml after a run changed its CO2
and water. Now its figures are stored at its start; `wattlog runs resite` changes them on purpose,
as a recorded event.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattlog.accounting.carbon.run_sites import site_figures, stored_site
from wattlog.accounting.carbon.sites import SITES_FILE_ENV, site_catalog
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.cli import main
from wattlog.events import EventKind

SITE = """
[sites.mylab]
description = "our cluster"
pue = {pue}
wue_onsite_l_per_kwh = 0.2
wue_offsite_l_per_kwh = [1.2, 3.4]
carbon_intensity_kg_per_kwh = {intensity}

[sites.mylab.sources]
pue = "facility report {year}"
carbon_intensity_kg_per_kwh = "utility disclosure {year}"
"""


def _write(path: Path, pue: float, intensity: float, year: int) -> None:
    path.write_text(SITE.format(pue=pue, intensity=intensity, year=year))


def _table(db: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    assert main(["table", "r", "--db", db, "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)["rows"][0]  # type: ignore[no-any-return]


def test_a_sites_file_edit_after_a_run_changes_none_of_its_figures_and_resite_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sites = tmp_path / "sites.toml"
    _write(sites, 1.3, 0.25, 2025)
    monkeypatch.setenv(SITES_FILE_ENV, str(sites))
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["run", "--run", "r", "--site", "mylab", "--db", db, "--", "true"]) == 0
    capsys.readouterr()
    before = _table(db, capsys)
    figures = before["figures"]  # type: ignore[index]
    assert figures["pue"]["value"] == 1.3  # type: ignore[index]
    _write(sites, 1.6, 0.5, 2026)  # the catalog changes the future, never the past
    after = _table(db, capsys)
    assert after["figures"] == before["figures"]
    named_again = _table(db, capsys, "--site", "mylab")  # its own site named (as an audit bundle does)
    assert named_again["figures"] == before["figures"]
    assert main(["runs", "resite", "r", "mylab", "--reason", "new facility report", "--db", db]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "site mylab -> mylab" in said and "facility report 2026" in said and "resite event" in said
    resited = _table(db, capsys)
    assert resited["figures"]["pue"]["value"] == 1.6  # type: ignore[index]
    ledger = Ledger(make_engine(db, create=False))
    (event,) = [e for e in ledger.events("r") if e.kind == EventKind.RESITE]
    assert event.payload["before"]["figures"]["figures"]["pue"]["value"] == 1.3
    assert event.payload["reason"] == "new facility report"
    stored = ledger.get_run("r").site_figures
    assert stored is not None and stored["figures"]["carbon_intensity_kg_per_kwh"]["year"] == 2026


def test_stored_figures_give_back_the_site_each_with_its_source(tmp_path: Path) -> None:
    sites = tmp_path / "sites.toml"
    _write(sites, 1.3, 0.25, 2025)
    site = site_catalog(sites)["mylab"]
    figures = site_figures(site, 1_800_000_000.0)
    assert json.loads(json.dumps(figures)) == figures  # stored as JSON
    assert stored_site(figures) == site
    assert figures["figures"]["pue"] == {"value": 1.3, "source": "facility report 2025", "year": 2025}


def test_a_run_from_before_the_figures_were_stored_says_it_reads_todays_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wattlog.accounting.ledger import RunSpec
    from wattlog.records import EnergyInterval, Kind, Source

    db = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(db))
    ledger.start_run("r", RunSpec(site="jupiter"))  # no figures: a run stored before migration 0018
    row = EnergyInterval.of("h", "g", Kind.GPU, Source.COUNTER, 1e9, 1e9 + 10, 100.0, 90.0, 110.0)
    ledger.record_intervals("r", [row])
    notes = " ".join(_table(db, capsys)["notes"])  # type: ignore[arg-type]
    assert "site figures read from today's catalog" in notes
