"""`wattlog disclose`: one model of what was measured and how, as the EU AI Act form's items and JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.accounting.publishing.disclosure_ledger import Spec, seeded
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.publishing.disclosure.gather import disclosure_of_project, disclosure_of_run
from wattlog.accounting.publishing.disclosure.mdf import methodology, sig, to_mdf
from wattlog.accounting.publishing.disclosure.model import Basis, Boundary
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.cli import full_app
from wattlog.records import Source

OPTIONS = TableOptions(catalog=site_catalog(None))
J_PER_MWH = 3.6e9


def test_a_runs_energy_is_given_at_each_boundary_with_its_band_source_and_the_factor_between(
    tmp_path: Path,
) -> None:
    ledger, _ = seeded(tmp_path)
    phase = disclosure_of_run(ledger, "pretrain", OPTIONS).phases[0]
    gpu, node, facility = (phase.at(b) for b in Boundary)
    assert gpu is not None and node is not None and facility is not None
    assert gpu.energy_j == pytest.approx(16 * 600.0 * 100 * 3600)  # 16 GPUs x 600 W x 100 h
    assert node.energy_j == pytest.approx(gpu.energy_j + 300.0 * 100 * 3600)
    assert facility.energy_j == pytest.approx(node.energy_j * 1.2)  # Jupiter's PUE
    assert phase.factor(Boundary.FACILITY, Boundary.NODE) == pytest.approx(1.2)
    assert phase.factor(Boundary.NODE, Boundary.GPU) == pytest.approx(9900 / 9600)
    assert (gpu.low_j, gpu.high_j) == pytest.approx((gpu.energy_j * 0.95, gpu.energy_j * 1.05))
    assert gpu.source == "sampled" and facility.source.startswith("derived")
    assert phase.basis == Basis.MEASURED and not phase.invalid
    assert phase.wall_clock_days == pytest.approx(100 / 24)
    assert phase.gpu_days == pytest.approx(16 * 100 / 24)
    assert phase.flops == pytest.approx(2.0e11 * 4.2e10)
    assert phase.sites[0].pue_source != "unsourced" and phase.sites[0].intensity_source != "unsourced"


def test_a_project_is_disclosed_by_phase_and_inference_is_named_as_left_out(tmp_path: Path) -> None:
    ledger, _ = seeded(tmp_path)
    found = disclosure_of_project(ledger, "p", OPTIONS)
    assert [p.phase for p in found.phases] == ["development", "final", "post-training"]
    development, final, post = found.phases
    assert development.runs == ("sweep",) and final.runs == ("pretrain",) and post.runs == ("sft",)
    assert found.excluded == ("serve: inference (not training; not in any phase)",)
    # a phase without FLOPs from every run says so: None, never 0
    assert development.flops is None and post.flops == pytest.approx(1.0e9 * 4.2e10)


def test_a_phase_sums_its_runs_per_boundary(tmp_path: Path) -> None:
    specs = (Spec("a", "ablation", "pretraining", 8, 10.0), Spec("b", "failed", "pretraining", 4, 20.0))
    ledger, _ = seeded(tmp_path, specs)
    (phase,) = disclosure_of_project(ledger, "p", OPTIONS).phases
    gpu = phase.at(Boundary.GPU)
    assert gpu is not None and gpu.energy_j == pytest.approx(600.0 * 3600 * (8 * 10 + 4 * 20))
    assert phase.gpu_days == pytest.approx((80 + 80) / 24)
    assert phase.wall_clock_days == pytest.approx((10 + 1 + 20) / 24)  # first start to last end


def test_a_gpu_only_run_has_no_node_figure_and_its_facility_figure_says_so(tmp_path: Path) -> None:
    ledger, _ = seeded(tmp_path, (Spec("g", "final", "pretraining", 8, 10.0, cpu_w=0.0),))
    phase = disclosure_of_run(ledger, "g", OPTIONS).phases[0]
    assert phase.at(Boundary.NODE) is None  # GPU energy is not node energy
    facility = phase.at(Boundary.FACILITY)
    assert facility is not None and "rest of the server not counted" in facility.source
    text = to_mdf(disclosure_of_run(ledger, "g", OPTIONS))
    assert "  - node: -" in text and "node / GPU factor: -" in text


def test_the_forms_items_mwh_to_two_figures_or_more_the_boundary_and_a_methodology_of_about_100_words(
    tmp_path: Path,
) -> None:
    ledger, _ = seeded(tmp_path)
    found = disclosure_of_run(ledger, "pretrain", OPTIONS)
    text = to_mdf(found)
    facility_mwh = 9900.0 * 1.2 * 100 * 3600 / J_PER_MWH
    assert (
        f"Amount of energy used for training: {sig(facility_mwh)} MWh at the facility boundary; measured"
        in text
    )
    assert re.search(r"- gpu: 0\.960 MWh \(band 0\.912 - 1\.01 MWh; source sampled\)", text)
    assert "facility / node factor (PUE): 1.200" in text
    assert "Training time: 4.17 wall-clock days; 66.7 GPU-days" in text
    assert "8.40e+21 FLOP" in text
    paragraph = methodology(found.phases[0])
    assert 60 <= len(paragraph.split()) <= 160
    assert "integrated power readings" in paragraph and "PUE 1.200" in paragraph and "No gaps" in paragraph


def test_a_simulated_run_is_never_called_measured(tmp_path: Path) -> None:
    ledger, _ = seeded(tmp_path, (Spec("sim", "final", "pretraining", 2, 1.0, source=Source.SIMULATED),))
    found = disclosure_of_run(ledger, "sim", OPTIONS)
    assert found.phases[0].basis == Basis.SIMULATED
    assert "MWh at the facility boundary; simulated (NOT a measurement" in to_mdf(found)
    assert sig(0.0012345) == "0.00123" and sig(1022.4) == "1,020" and sig(None) == "-"


def test_gaps_are_counted_and_named_in_the_methodology(tmp_path: Path) -> None:
    ledger, _ = seeded(tmp_path, (Spec("gappy", "final", "pretraining", 2, 10.0, gap_s=1800.0),))
    phase = disclosure_of_run(ledger, "gappy", OPTIONS).phases[0]
    assert phase.gap_count == 1 and phase.gap_device_s == pytest.approx(1800.0)
    assert "1 gap(s) totalling 0.500 device-hours" in methodology(phase)


def test_the_command_writes_mdf_and_json_for_a_run_and_a_project(tmp_path: Path) -> None:
    _, url = seeded(tmp_path)
    runner = CliRunner()
    mdf = runner.invoke(full_app(), ["disclose", "pretrain", "--db", url], env={"COLUMNS": "200"})
    assert mdf.exit_code == 0, mdf.output
    assert "### Phase: final" in mdf.output and "Measurement methodology:" in mdf.output
    out = runner.invoke(full_app(), ["disclose", "--project", "p", "--db", url, "--format", "json"])
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    assert [p["phase"] for p in document["phases"]] == ["development", "final", "post-training"]
    assert document["phases"][0]["flops"] is None  # not reported: null, never 0
    assert document["phases"][1]["methodology"].startswith("Energy was recorded by wattlog's node agents")
    energy = document["phases"][1]["energy"]
    assert [e["boundary"] for e in energy] == ["gpu", "node", "facility"]
    assert all(e["low_mwh"] <= e["mwh"] <= e["high_mwh"] and e["source"] for e in energy)
    both = runner.invoke(full_app(), ["disclose", "pretrain", "--project", "p", "--db", url])
    assert both.exit_code != 0


def test_a_run_the_gate_finds_invalid_is_written_and_the_command_exits_non_zero(tmp_path: Path) -> None:
    # counters never checked against power x time at start-up: the gate's reason, so not fit to publish
    _, url = seeded(tmp_path, (Spec("unchecked", "final", "pretraining", 2, 1.0, source=Source.COUNTER),))
    out = CliRunner().invoke(full_app(), ["disclose", "unchecked", "--db", url], env={"COLUMNS": "200"})
    assert out.exit_code == 1
    assert "Validity: NOT VALID (1 reason(s)): unchecked: energy counter(s) not checked" in out.output
    assert "Amount of energy used for training:" in out.output  # still written, with the verdict beside it


def test_a_run_without_energy_says_n_a_and_the_command_exits_non_zero(tmp_path: Path) -> None:
    _, url = seeded(tmp_path, (Spec("empty", "final", "pretraining", 0, 1.0, cpu_w=0.0),))
    out = CliRunner().invoke(full_app(), ["disclose", "empty", "--db", url], env={"COLUMNS": "200"})
    assert out.exit_code == 1
    assert "Amount of energy used for training: N/A" in out.output and "  - gpu: -" in out.output
