"""`wattlog disclose --format sci`: ISO/IEC 21031 per token and per FLOP, location-based only."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.accounting.publishing.disclosure_ledger import Spec, seeded
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.devices import device_catalog
from wattlog.accounting.publishing.disclosure.gather import disclosure_of_run
from wattlog.accounting.publishing.disclosure.sci import sci_of
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.cli import full_app

OPTIONS = TableOptions(catalog=site_catalog(None))


def test_sci_is_energy_times_location_intensity_plus_embodied_per_token_and_per_flop(tmp_path: Path) -> None:
    ledger, _ = seeded(tmp_path)
    sci = sci_of(disclosure_of_run(ledger, "pretrain", OPTIONS).phases[0])
    facility_kwh = 9900.0 * 100 * 1.2 / 1000
    assert sci.energy_kwh == pytest.approx(facility_kwh)
    assert sci.intensity_g_per_kwh == pytest.approx(332.0)  # Jupiter, location-based
    per_gpu_hour = device_catalog().get("H100")[0].embodied_kg_per_gpu_hour
    assert per_gpu_hour is not None
    assert sci.embodied_g == pytest.approx(16 * 100 * per_gpu_hour * 1000)
    total = facility_kwh * 332.0 + 16 * 100 * per_gpu_hour * 1000
    assert sci.per(sci.tokens) == pytest.approx(total / 2.0e11)
    assert sci.per(sci.flops) == pytest.approx(total / (2.0e11 * 4.2e10))
    assert sci.missing == ()


def test_the_command_prints_scores_and_exits_non_zero_where_one_cannot_be_computed(tmp_path: Path) -> None:
    _, url = seeded(tmp_path, (Spec("t", "final", "pretraining", 2, 1.0, tokens=1e6, flops_per_token=6e9),
                               Spec("notokens", "final", "pretraining", 2, 1.0)))  # fmt: skip
    runner = CliRunner()
    done = runner.invoke(
        full_app(), ["disclose", "t", "--db", url, "--format", "sci"], env={"COLUMNS": "200"}
    )
    assert done.exit_code == 0, done.output
    assert "SCI per token: " in done.output and "location-based" in done.output
    partial = runner.invoke(full_app(), ["disclose", "notokens", "--db", url, "--format", "sci"])
    assert partial.exit_code == 1
    assert "SCI per token: -" in partial.output
    assert "not computed: tokens not reported by the trainer" in partial.output


def test_market_based_sci_is_refused_with_the_reason(tmp_path: Path) -> None:
    _, url = seeded(tmp_path, (Spec("t", "final", "pretraining", 2, 1.0),))
    out = CliRunner().invoke(
        full_app(),
        ["disclose", "t", "--db", url, "--format", "sci", "--method", "market"],
        env={"COLUMNS": "300"},
    )
    assert out.exit_code != 0
    message = " ".join(str(out.exception or "").split()) + " ".join(out.output.split())
    assert "admits only location-based intensity" in message and "offsets never lower an SCI score" in message


def test_a_run_without_a_device_model_gets_no_embodied_term_from_an_assumed_board(tmp_path: Path) -> None:
    from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
    from wattlog.records import EnergyInterval, Kind, Source

    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("bare", RunSpec(project="p", role="final", site="jupiter"))  # no device model
    t0 = run.start_s
    row = EnergyInterval.of("n", "GPU-0", Kind.GPU, Source.SAMPLED, t0, t0 + 3600, 2.16e6, 2.0e6, 2.3e6)
    ledger.record_intervals(run.id if run.id is not None else "bare", [row])
    sci = sci_of(disclosure_of_run(ledger, "bare", OPTIONS).phases[0])
    assert sci.embodied_g is None
    assert "no embodied figure for the device model (M left out)" in sci.missing
