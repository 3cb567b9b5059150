"""`wattlog table --market-file`: market-based columns (annual, hourly) beside location-based, all formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.accounting.test_scope2 import MARKET_FILE, T0
from wattlog.accounting.carbon.scope2 import Matching
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.market_columns import HEADERS
from wattlog.cli import main
from wattlog.records import EnergyInterval, Kind, Source

H = 3600
SITES = """
[sites.mylab]
pue = 1.2
wue_onsite_l_per_kwh = 0.0
wue_offsite_l_per_kwh = 1.29
carbon_intensity_kg_per_kwh = 0.4
"""
ANNUAL, HOURLY = HEADERS[Matching.ANNUAL], HEADERS[Matching.HOURLY]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[str, list[str]]:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(db))
    for name in ("r1", "r2"):
        run = ledger.start_run(name, RunSpec(site="mylab"))
        rows = [
            EnergyInterval.of(
                "n0", "gpu0", Kind.GPU, Source.COUNTER, T0 + i * H, T0 + (i + 1) * H, 3.6e9, 3.6e9, 3.6e9
            )
            for i in range(3)
        ]  # 1 MWh IT in each of three hours: 3.6 MWh facility at PUE 1.2
        ledger.record_intervals(run.id, rows)
    (tmp_path / "sites.toml").write_text(SITES, encoding="utf-8")
    (tmp_path / "market.toml").write_text(MARKET_FILE, encoding="utf-8")
    files = ["--sites-file", str(tmp_path / "sites.toml"), "--market-file", str(tmp_path / "market.toml")]
    return db, [*files, "--db", db]


def _json_rows(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    document = json.loads(capsys.readouterr().out)
    rows = document["rows"] if isinstance(document, dict) else document
    return {row["model"].split(" ")[0]: row["extra"] for row in rows}


def test_market_columns_beside_location_based(
    setup: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, args = setup
    assert main(["table", "r1", "r2", *args, "--format", "json"]) == 0
    extra = _json_rows(capsys)
    # hand check (tests/accounting/test_scope2.py): r1 annual 0.04 t, hourly 0.6 t; r2 gets what is left:
    # annual 3.6 MWh of the supplier at 0.2 = 0.72 t, hourly all residual 3.6 x 0.5 = 1.8 t
    assert extra["r1"] == {ANNUAL: "0.04", HOURLY: "0.6"}
    assert extra["r2"] == {ANNUAL: "0.72", HOURLY: "1.8"}
    assert main(["table", "r1", *args, "--format", "csv"]) == 0  # its notes go to stderr
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert header.endswith(f"{ANNUAL},{HOURLY}") and row.endswith(",0.04,0.6")
    assert main(["table", "r1", *args, "--format", "markdown"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "CO2 (tCO2eq) is location-based" in text and "annual matching (GHG Protocol" in text


def test_the_table_spends_what_scope2_recorded(
    setup: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, args = setup
    files = [a for a in args if a != db and a != "--db"]
    assert main(["scope2", "r2", "--site", "mylab", *files, "--db", db, "--format", "csv"]) == 0  # r2 first
    capsys.readouterr()
    assert main(["table", "r1", "r2", *args, "--format", "json"]) == 0
    extra = _json_rows(capsys)
    assert extra["r2"] == {ANNUAL: "0.04", HOURLY: "0.6"}  # as scope2 recorded it, not a second share
    assert extra["r1"] == {ANNUAL: "0.72", HOURLY: "1.8"}  # what r2 left


def test_a_run_of_a_site_without_a_market_shows_a_dash(
    setup: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, args = setup
    assert main(["table", "r1", *args, "--site", "jupiter", "--format", "json"]) == 0
    assert _json_rows(capsys)["r1"] == {ANNUAL: "-", HOURLY: "-"}


def test_the_report_shows_the_market_columns(setup: tuple[str, list[str]], tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    from wattlog.accounting.carbon.sites import site_catalog
    from wattlog.accounting.publishing.run_table import TableOptions
    from wattlog.dashboards.report.data import load_report

    db, _ = setup
    options = TableOptions(catalog=site_catalog(tmp_path / "sites.toml"))
    report = load_report(Ledger(make_engine(db)), "r1", options, market_file=str(tmp_path / "market.toml"))
    table = report.table()
    assert list(table[ANNUAL])[0] == "0.04" and list(table[HOURLY])[0] == "0.6"
    assert set(list(table[ANNUAL])[1:]) == {"-"}  # the paper's rows have no market-based figure
