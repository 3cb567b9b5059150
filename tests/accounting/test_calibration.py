"""A site's measured multiplier (node boundary / GPUs) with its band, stored, and used instead of 1.74."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.commands.calibrate_cli import register
from wattlog.accounting.devices import Overhead
from wattlog.accounting.fleet.calibration import (
    CalibrationWindow,
    calibrate,
    load_calibration_file,
    load_calibrations,
    save_calibration,
)
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.cli import main
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError
from wattlog.records import EnergyInterval, Kind, Source

T0 = 1_800_000_000.0  # 2027-01-15


def _iv(device: str, kind: Kind, source: Source, joules: float, rel: float) -> EnergyInterval:
    return EnergyInterval.of(
        "n0", device, kind, source, T0, T0 + 3600, joules, joules * (1 - rel), joules * (1 + rel)
    )


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=FakeClock(wall_offset_s=T0))
    rows = {
        "under-load": [
            _iv("dcmi:local", Kind.NODE, Source.SAMPLED, 5.04e6, 0.10),
            _iv("gpu0", Kind.GPU, Source.COUNTER, 3.6e6, 0.05),
            _iv("cpu", Kind.CPU, Source.ESTIMATED, 0.72e6, 0.30),
        ],
        "gpus-only": [_iv("gpu0", Kind.GPU, Source.COUNTER, 3.6e6, 0.05)],
        "broken-meter": [
            _iv("dcmi:local", Kind.NODE, Source.SAMPLED, 1.0e6, 0.10),
            _iv("gpu0", Kind.GPU, Source.COUNTER, 3.6e6, 0.05),
        ],
    }
    for name, intervals in rows.items():
        run = ledger.start_run(name, RunSpec(site="jupiter", device_model="H100"))
        ledger.record_intervals(run.id, intervals)
        ledger.end_run(run.id, end_s=T0 + 3600)
    return ledger


def test_the_multiplier_is_node_over_gpus_with_the_band_both_bands_allow(ledger: Ledger) -> None:
    cal = calibrate(ledger, "under-load")
    assert (cal.site, cal.run, cal.date) == ("jupiter", "under-load", "2027-01-15")
    assert cal.factor == pytest.approx(1.4)
    assert (cal.low, cal.high) == pytest.approx((5.04 * 0.9 / (3.6 * 1.05), 5.04 * 1.1 / (3.6 * 0.95)))
    assert cal.hardware == "1 host(s) n0: 1 GPU(s) H100, IPMI DCMI meter"
    assert cal.overhead().label.startswith("GPU energy x1.4 [x1.20 - x1.62] for the rest of the server")


def test_stored_per_site_and_read_back(ledger: Ledger, tmp_path) -> None:
    path = tmp_path / "calibrations.toml"
    save_calibration(path, calibrate(ledger, "under-load", site="texas"))
    save_calibration(path, calibrate(ledger, "under-load"))
    stored = load_calibration_file(path)
    assert sorted(stored) == ["jupiter", "texas"] and stored["jupiter"] == calibrate(ledger, "under-load")
    assert load_calibrations(path)["jupiter"].band == pytest.approx(
        (stored["jupiter"].low, stored["jupiter"].high)
    )


def test_the_table_uses_the_site_multiplier_instead_of_the_constant(ledger: Ledger, tmp_path) -> None:
    constant = Overhead(1.74)
    measured = {"jupiter": calibrate(ledger, "under-load").overhead()}
    options = TableOptions(catalog=site_catalog(), overhead=constant, calibrations=measured)
    row = run_row(ledger, ledger.get_run("gpus-only"), options)
    assert row.energy_j == pytest.approx(3.6e6 * 1.4)
    assert any("measured at jupiter: node/GPU energy of run under-load" in note for note in row.notes)
    fallback = run_row(
        ledger, ledger.get_run("gpus-only"), TableOptions(catalog=site_catalog(), overhead=constant)
    )
    assert fallback.energy_j == pytest.approx(3.6e6 * 1.74)
    assert any(constant.source in note for note in fallback.notes)


@pytest.mark.parametrize(
    ("run", "error"),
    [("gpus-only", "no node meter"), ("broken-meter", "reads x0.28 of its GPUs: not stored")],
)
def test_what_cannot_be_a_multiplier_is_refused(ledger: Ledger, run: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        calibrate(ledger, run)


def test_wattlog_calibrate_stores_it_and_wattlog_table_uses_it(tmp_path, monkeypatch, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    ledger = Ledger(make_engine(url), clock=FakeClock(wall_offset_s=T0))
    for name, intervals in (
        (
            "under-load",
            [
                _iv("dcmi:local", Kind.NODE, Source.SAMPLED, 5.04e6, 0.1),
                _iv("gpu0", Kind.GPU, Source.COUNTER, 3.6e6, 0.05),
            ],
        ),
        ("gpus-only", [_iv("gpu0", Kind.GPU, Source.COUNTER, 3.6e6, 0.05)]),
    ):
        run = ledger.start_run(name, RunSpec(site="jupiter"))
        ledger.record_intervals(run.id, intervals)
        ledger.end_run(run.id, end_s=T0 + 3600)
    ledger.engine.dispose()
    monkeypatch.setenv("WATTLOG_CALIBRATIONS", str(tmp_path / "cal.toml"))
    assert main(["calibrate", "under-load", "--db", url]) == 0
    assert "site jupiter: x1.400 [x1.200 - x1.621] server/GPU energy" in capsys.readouterr().out
    assert main(["table", "gpus-only", "--db", url, "--overhead", "1.74"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert (
        "GPU energy x1.4 [x1.20 - x1.62] for the rest of the server, estimated (measured at jupiter"
        in printed
    )
    assert "x1.74" not in printed


def test_wattlog_calibrate_without_a_run_measures_its_own_window(tmp_path, monkeypatch) -> None:
    """`calibrate --site S` hands its window to the measurer (trainer.calibrate_window), then calibrates."""
    url = f"sqlite:///{tmp_path / 'own.db'}"
    asked: list[CalibrationWindow] = []

    def measure(window: CalibrationWindow) -> str:
        asked.append(window)
        ledger = Ledger(make_engine(window.db or ""), clock=FakeClock(wall_offset_s=T0))
        run = ledger.start_run("own-window", RunSpec(site=window.site))
        node = _iv("redfish:bmc/Chassis/1U", Kind.NODE, Source.SAMPLED, 5.04e6, 0.02)
        ledger.record_intervals(run.id, [node, _iv("gpu0", Kind.GPU, Source.COUNTER, 3.6e6, 0.05)])
        ledger.end_run(run.id, end_s=T0 + 3600)
        ledger.engine.dispose()
        return "own-window"

    app = typer.Typer()
    register(app, measure)
    monkeypatch.setenv("WATTLOG_CALIBRATIONS", str(tmp_path / "cal.toml"))
    args = ["--site", "texas", "--idle-s", "2", "--load-s", "3", "--db", url]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert asked == [CalibrationWindow("texas", 2.0, 3.0, url)]
    assert "site texas: x1.400 [x1.307 - x1.503] server/GPU energy, measured by run own-window" in done.output
    assert load_calibration_file(tmp_path / "cal.toml")["texas"].run == "own-window"
    without = typer.Typer()
    register(without)
    refused = CliRunner().invoke(without, ["--site", "texas", "--db", url])
    assert refused.exit_code != 0 and "name a run" in str(refused.exception)
    with pytest.raises(ConfigError, match="--site S"):
        CalibrationWindow("")
