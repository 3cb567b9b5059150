"""`wattlog scope2`: two runs of one site, location- and market-based, annual and hourly (hand-checked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.accounting.test_scope2 import MARKET_FILE, T0
from wattlog.accounting.carbon.instruments import load_uses
from wattlog.accounting.ledger import Ledger, make_engine
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


def _two_runs(tmp_path: Path) -> tuple[str, list[str]]:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(db))
    for name in ("r1", "r2"):
        run = ledger.start_run(name)
        hours = [
            EnergyInterval.of(
                "n0", "gpu0", Kind.GPU, Source.COUNTER, T0 + i * H, T0 + (i + 1) * H, 3.6e9, 3.5e9, 3.7e9
            )
            for i in range(3)
        ]  # 1 MWh in each of three hours
        ledger.record_intervals(run.id, hours)
    (tmp_path / "sites.toml").write_text(SITES, encoding="utf-8")
    (tmp_path / "market.toml").write_text(MARKET_FILE, encoding="utf-8")
    files = ["--sites-file", str(tmp_path / "sites.toml"), "--market-file", str(tmp_path / "market.toml")]
    return db, files


def test_two_runs_share_the_instruments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, files = _two_runs(tmp_path)
    assert main(["scope2", "r1", "r2", "--site", "mylab", *files, "--db", db, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # r1: 3.6 MWh; location 3.6 x 0.4 = 1.44 t; annual 0.04 t (3.6 covered); hourly 0.6 t (2.4 covered)
    assert lines[1] == "r1,3.6,1.44,0.04,3.6,0.6,2.4"
    # r2: the PPA and the certificate are spent: annual all supplier 3.6 x 0.2 = 0.72; hourly all residual 1.8
    assert lines[2] == "r2,3.6,1.44,0.72,3.6,1.8,0"
    assert main(["scope2", "r1", "--site", "mylab", *files, "--db", db, "--format", "markdown"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "annual matching (GHG Protocol Scope 2 Guidance 2015)" in text
    # r1 again: the same share as before (its uses replaced, not added); r2's recorded uses stay spent
    assert "supplier 6.2" in text and "r1 | 3.6 | 1.44 | 0.04 | 3.6 | 0.6 | 2.4" in text


def test_an_instrument_used_in_one_call_is_not_used_again_in_a_later_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, files = _two_runs(tmp_path)
    common = ["--site", "mylab", *files, "--db", db, "--format", "csv"]
    assert main(["scope2", "r1", *common]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "r1,3.6,1.44,0.04,3.6,0.6,2.4"
    assert main(["scope2", "r2", *common]) == 0  # a later call: r1's PPA and certificate are spent
    assert capsys.readouterr().out.splitlines()[1] == "r2,3.6,1.44,0.72,3.6,1.8,0"
    assert main(["scope2", "r2", "r1", *common]) == 0  # any order, any number of calls: the same shares
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == ["r2,3.6,1.44,0.72,3.6,1.8,0", "r1,3.6,1.44,0.04,3.6,0.6,2.4"]
    uses = load_uses(Ledger(make_engine(db)), "mylab", "annual")
    by_instrument: dict[str, float] = {}
    for use in uses:
        by_instrument[use.instrument] = by_instrument.get(use.instrument, 0.0) + use.mwh
    assert by_instrument == pytest.approx({"ppa": 2.4, "rec": 1.0, "supplier": 3.8})  # never above supply


def test_a_dry_run_records_no_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, files = _two_runs(tmp_path)
    common = ["--site", "mylab", *files, "--db", db, "--format", "csv"]
    assert main(["scope2", "r1", "--dry-run", *common]) == 0
    capsys.readouterr()  # (csv has no notes)
    assert main(["scope2", "r2", *common]) == 0  # r1 took nothing: r2 gets what r1 would have
    assert capsys.readouterr().out.splitlines()[1] == "r2,3.6,1.44,0.04,3.6,0.6,2.4"
