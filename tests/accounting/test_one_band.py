"""One run, one band in every reader: the report's headline, Table 19, the CSV and `wattlog table`.

A killed run: 100 s of rows, then its lease lapses with a gap after the last row. On 38e5f82 the
headline (the footprint) said 27.7 - 32.9 Wh while Table 19, the CSV and `wattlog table` gave the
band widened by the lost gap (issue 38). The gap's energy is not measured, so the widened band is
the honest one; every reader now takes it from the run's Energy.band_j.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.lease import reap_lost, renew_lease
from wattlog.accounting.publishing.exports import rows_csv
from wattlog.accounting.publishing.run_table import TableOptions, run_footprint, run_row
from wattlog.cli import main
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Kind, Source

T0 = 1_764_000_000.0


def _killed(url: str) -> Ledger:
    """100 s of 8 GPUs at 650 W (band -5 %/+5 %), then no flush: the 60 s lease lapses and is reaped."""
    clock = FakeClock(wall_offset_s=T0)
    ledger = Ledger(make_engine(url), clock=clock)
    ledger.start_run("killed", RunSpec(site="jupiter", host="n1", device_model="H100", model="m"))
    for _ in range(20):  # a flush every 5 s
        start_s = clock.wall()
        clock.advance(5.0)
        joules = (650.0 * 5, 617.5 * 5, 682.5 * 5)
        rows = [
            EnergyInterval.of("n1", f"GPU-{i}", Kind.GPU, Source.COUNTER, start_s, clock.wall(), *joules)
            for i in range(8)
        ]
        ledger.record_intervals("killed", rows)
        renew_lease(ledger, "killed", 60.0)
    clock.advance(61.0)
    assert [r.name for r in reap_lost(ledger)[1]] == ["killed"]
    return ledger


def test_the_headline_table19_the_csv_and_wattlog_table_give_one_band(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = _killed(url)
    run, options = ledger.get_run("killed"), TableOptions(catalog=site_catalog())
    footprint = run_footprint(ledger, run, options)
    row = run_row(ledger, run, options)
    assert footprint is not None and row.energy_band_j is not None
    headline = (footprint.energy_band_j.lo, footprint.energy_band_j.hi)
    assert headline == pytest.approx((row.energy_band_j.lo, row.energy_band_j.hi))
    # the lost minute is in the band: 8 GPUs x 650 W x 60 s on top of the rows' high side
    assert headline == pytest.approx((8 * 617.5 * 100, 8 * 682.5 * 100 + 8 * 650.0 * 60))
    (exported,) = csv.DictReader(io.StringIO(rows_csv([row])))
    assert (float(exported["energy_band_j_min"]), float(exported["energy_band_j_max"])) == pytest.approx(
        headline
    )
    assert main(["table", "killed", "--db", url, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    band = document["rows"][0]["energy_band_j"]
    assert (band["min"], band["max"]) == pytest.approx(headline)


def test_the_reports_summary_takes_the_same_band(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    from wattlog.dashboards.report.data import load_summary

    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = _killed(url)
    summary = load_summary(ledger, "killed", TableOptions(catalog=site_catalog()))
    assert summary.footprint is not None and summary.rows[0].energy_band_j is not None
    assert summary.footprint.energy_band_j == summary.rows[0].energy_band_j
