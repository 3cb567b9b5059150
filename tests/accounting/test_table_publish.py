"""`wattlog table` as a publisher: Tables 1-3 of a project, exports, power, overhead, site-less runs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from wattlog.accounting.devices import device_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.example_project import EXAMPLE_RUNS, seed_example_project
from wattlog.accounting.units import readable_count
from wattlog.cli import main
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.sensors.traces import TrainingTrace

H0 = 1_767_225_600.0


@pytest.fixture
def example_db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'example.db'}"
    engine = make_engine(url)
    seed_example_project(Ledger(engine))
    engine.dispose()
    return url


def markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """Every Markdown pipe table in `text`, as rows keyed by header."""
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            headers = [h.strip() for h in current[0].strip("|").split("|")]
            rows = [[c.strip() for c in row.strip("|").split("|")] for row in current[2:]]
            tables.append([dict(zip(headers, row, strict=True)) for row in rows])
            current = []
    return tables


def run_table(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["table", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_project_by_group_is_table_1_with_embodied_apart_and_the_development_share(
    capsys: pytest.CaptureFixture[str], example_db: str
) -> None:
    code, out, _ = run_table(
        capsys, "--project", "example", "--by", "group", "--db", example_db, "--format", "markdown"
    )
    assert code == 0
    table1, table2, table3 = markdown_tables(out)
    labels = [r["Scale group"] for r in table1]
    assert labels == [
        "13B (development)", "1B (development)", "7B (development)",
        "Development total", "Final runs (Table 2)", "Total (example)",
    ]  # fmt: skip
    dev_hours = sum(s.gpus * s.hours for s in EXAMPLE_RUNS if s.role != "final")
    all_hours = sum(s.gpus * s.hours for s in EXAMPLE_RUNS)
    assert table1[3]["GPU-hours"] == f"{dev_hours:,}" and table1[-1]["GPU-hours"] == f"{all_hours:,}"
    assert table1[1]["Runs"] == "5" and table1[-1]["Runs"] == str(len(EXAMPLE_RUNS))
    dev_mwh = sum(s.gpus * s.hours * s.power_w for s in EXAMPLE_RUNS if s.role != "final") / 1e6
    assert table1[3]["Energy (MWh)"] == f"{dev_mwh:,.0f}"
    # Embodied: 463 kg / (4 x 8,760 h) per H100 GPU-hour, in its own column, never in the emissions.
    per_hour_t = 463.0 / (4 * 8760) / 1000
    assert float(table1[-1]["Embodied (tCO2eq)"]) == pytest.approx(all_hours * per_hour_t, rel=5e-3)
    operational = sum(s.gpus * s.hours * s.power_w for s in EXAMPLE_RUNS) / 1e6 * 1.2 * 0.332
    assert float(table1[-1]["Emissions (tCO2eq)"]) == pytest.approx(operational, abs=0.5)
    assert (
        f"Development (sweeps, ablations, failed runs): {100 * dev_hours / all_hours:.0f} % of GPU-hours"
        in out
    )
    assert "Embodied (hardware, amortised per GPU-hour)" in out and "arXiv 2503.05804" in out
    assert [r["Run"] for r in table2] == [s.name for s in EXAMPLE_RUNS if s.role == "final"]
    assert table3[0]["Inference run"] == "serve-7b"


def test_break_even_requests_equal_the_trainings_emissions(
    capsys: pytest.CaptureFixture[str], example_db: str
) -> None:
    code, out, _ = run_table(
        capsys, "--project", "example", "--by", "stage", "--db", example_db, "--format", "json"
    )
    assert code == 0
    tables = json.loads(out)
    [row] = tables[2]["rows"]
    serve = next(s for s in EXAMPLE_RUNS if s.stage == "inference")
    training_mwh = sum(s.gpus * s.hours * s.power_w for s in EXAMPLE_RUNS if s.stage != "inference") / 1e6
    per_request_g = serve.gpus * serve.hours * serve.power_w / 1e6 * 1.2 * 0.332 * 1e6 / serve.requests  # type: ignore[operator]
    expected = training_mwh * 1.2 * 0.332 * 1e6 / per_request_g
    # 2,167,619,048 was ten digits of an estimate: three figures and an SI prefix, as every amount
    assert row["Break-even requests"] == readable_count(expected) == "2.17 G"
    assert serve.requests is not None and serve.requests > 999_999
    # beyond six digits an SI prefix, as every number but tokens (was "2,000,000")
    assert row["Requests"] == readable_count(serve.requests) == "2.00 M"
    stages = [r["Stage"] for r in tables[0]["rows"]]
    assert "debugging (development)" in stages and "pretraining (development)" in stages


def test_by_phase_rows_are_development_and_final(capsys: pytest.CaptureFixture[str], example_db: str) -> None:
    code, out, _ = run_table(
        capsys, "--project", "example", "--by", "phase", "--db", example_db, "--format", "markdown"
    )
    assert code == 0
    assert [r["Phase"] for r in markdown_tables(out)[0]] == ["development", "final", "Total (example)"]


def test_by_needs_a_project(capsys: pytest.CaptureFixture[str], example_db: str) -> None:
    code, _, err = run_table(capsys, "--by", "group", "--db", example_db)
    assert code == 2 and "--by needs --project" in err


def test_reference_adds_the_published_rows_before_the_ledgers_runs(
    capsys: pytest.CaptureFixture[str], example_db: str
) -> None:
    code, out, _ = run_table(capsys, "--reference", "--db", example_db, "--format", "markdown")
    assert code == 0
    models = [r["Model"] for r in markdown_tables(out)[0]]
    assert models[:5] == ["Llama 2 7B", "Llama 3.1 8B", "OLMo 7B", "OLMo 2 7B", "OLMo 2 13B"]
    finals = [s for s in EXAMPLE_RUNS if s.role == "final"]
    assert len(models) == 6 + len(finals)  # the final runs are kept, and come last
    assert f"{len(EXAMPLE_RUNS) - len(finals)} development run(s) not shown" in out
    assert models[-1].startswith("example 7B (serve-7b")


def test_a_siteless_run_is_a_note_not_a_failure(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    ledger.start_run("somewhere", RunSpec(site="jupiter", role="final"))
    ledger.start_run("nowhere", RunSpec(role="final"))
    ledger.engine.dispose()
    code, out, err = run_table(capsys, "--db", url, "--format", "markdown")
    assert code == 0 and err == ""
    assert "nowhere (nowhere, final): recorded without a site, so no footprint: pass --site NAME" in out


def test_csv_has_min_and_max_columns_and_the_notes_apart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    code, out, err = run_table(
        capsys,
        "--reference",
        "--db",
        f"sqlite:///{tmp_path / 'none.db'}",
        "--format",
        "csv",
        "--notes",
        str(notes),
    )
    assert code == 0 and err == ""
    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(out))}
    llama = rows["Llama 3.1 8B"]
    assert (llama["water_kl_min"], llama["water_kl_max"]) == ("1450.0", "4823.0")
    assert (llama["total_power_mwh_min"], llama["carbon_intensity_kg_per_kwh_min"]) == ("1022.0", "")
    assert not any(line.startswith("#") for line in out.splitlines())
    assert "4,789" in notes.read_text() and "Left out" in notes.read_text()
    code, out, err = run_table(
        capsys, "--reference", "--db", f"sqlite:///{tmp_path / 'none.db'}", "--format", "csv"
    )
    assert code == 0 and "Left out" in err and "Left out" not in out


def test_json_carries_every_figure_with_its_source_and_band(
    capsys: pytest.CaptureFixture[str], example_db: str
) -> None:
    code, out, _ = run_table(capsys, "final-7b", "--reference", "--db", example_db, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    run = doc["rows"][-1]
    assert run["row"] == "run" and run["energy_source"] == "simulated"
    energy = run["figures"]["total_power_mwh"]
    assert energy["value"] == pytest.approx(128 * 500 * 500 / 1e6) and energy["source"] == "simulated"
    assert run["energy_band_mwh"]["min"] == pytest.approx(energy["value"] * 0.95)
    assert "jupiter" in run["figures"]["pue"]["source"]
    olmo = next(r for r in doc["rows"] if r["model"] == "OLMo 2 7B")
    assert (
        olmo["figures"]["water_kl"]["text"] == "202" and "Table 19" in olmo["figures"]["water_kl"]["source"]
    )
    assert olmo["figures"]["carbon_intensity_kg_per_kwh"]["unit"] == "kg CO2e/kWh"
    llama = next(r for r in doc["rows"] if r["model"] == "Llama 2 7B")
    assert llama["figures"]["carbon_intensity_kg_per_kwh"] is None
    assert (llama["figures"]["water_kl"]["min"], llama["figures"]["water_kl"]["max"]) == (105.0, 347.0)


def test_hf_model_card_block(capsys: pytest.CaptureFixture[str], example_db: str) -> None:
    code, out, _ = run_table(capsys, "final-7b-sft", "--db", example_db, "--format", "hf")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "co2_eq_emissions:"
    grams = float(lines[1].split(": ")[1])
    assert grams == pytest.approx(32 * 20 * 500 / 1e6 * 1.2 * 0.332 * 1e6, rel=1e-6)  # grams, not tonnes
    keys = [line.split(":")[0].strip() for line in lines[1:]]
    assert keys == ["emissions", "source", "training_type", "geographical_location", "hardware_used"]
    assert '"fine-tuning"' in out and '"32 x H100"' in out and "Jupiter" in out
    code, _, err = run_table(capsys, "--db", example_db, "--format", "hf")
    assert code == 2 and "one run" in err


def test_overhead_applies_to_gpu_only_runs_and_is_labelled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    for name, kinds in (("gpus", [Kind.GPU]), ("node", [Kind.GPU, Kind.CPU])):
        run = ledger.start_run(name, RunSpec(site="jupiter", role="final"))
        rows = [
            EnergyInterval.of("h", k.value, k, Source.COUNTER, H0, H0 + 3600, 3.6e9, 3.6e9, 3.6e9)
            for k in kinds
        ]
        ledger.record_intervals(run.id, rows)  # type: ignore[arg-type]
    ledger.engine.dispose()
    code, out, _ = run_table(capsys, "--db", url, "--format", "markdown", "--overhead", "1.74")
    assert code == 0
    gpus, node = markdown_tables(out)[0]
    assert gpus["Total power (MWh)"] == "1.74" and gpus["Energy source"] == "counter+estimated"
    assert (gpus["GPU energy (MWh)"], gpus["CPU+DRAM energy (MWh)"]) == ("1.00", "0.740")  # one unit a column
    assert node["Total power (MWh)"] == "2.00" and node["Energy source"] == "counter"
    assert "x1.74 for the rest of the server, estimated (Olmo 3 follow-up (arXiv 2605.01158)" in out
    assert "overhead multiplier not applied: CPU/DRAM (or node) energy was measured" in out
    code, _, err = run_table(capsys, "--db", url, "--overhead", "0.5")
    assert code == 2 and "--overhead must be a number >= 1" in err


def test_power_shows_percent_of_limit_dips_swing_and_ramp(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = TrainingTrace.generate(
        seed=1, duration_s=300.0, step_s=(0.5, 0.5), comm_fraction=0.2, checkpoint_every_s=60.0,
        checkpoint_s=5.0, checkpoint_w=100.0, jitter=0.0, power_jitter=0.0,
    )  # fmt: skip
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("train", RunSpec(site="jupiter", device_model="H100"))
    rows = [
        EnergyInterval.of("h", f"GPU-{g}", Kind.GPU, Source.SIMULATED, H0 + t, H0 + t + 1, e, e, e)
        for t in range(300)
        for g in range(4)
        if (e := trace.energy_j(t, t + 1)) is not None
    ]
    ledger.record_intervals(run.id, rows)  # type: ignore[arg-type]
    ledger.engine.dispose()
    code, out, _ = run_table(capsys, "train", "--db", url, "--power", "--format", "markdown")
    assert code == 0
    power = markdown_tables(out)[1][0]
    assert power["Dips"] == "4"  # stalls at 60, 120, 180, 240 s (a fifth would start at 300 s)
    low, median, high = (
        float(p.split()[0]) for p in power["% of power limit (min / median / max)"].split(" / ")
    )
    assert low == pytest.approx(100 / 7, abs=0.5) and median == pytest.approx(590 / 7, abs=1)
    assert power["Swing"] == "1.96 kW"  # 4 x (590 - 100) W
    assert power["Resolution"] == "1.00 s"
    limit = device_catalog().get("H100")[0].power_limit_w
    assert f"power limit {limit:g} W per GPU (H100, recorded device model" in out


def test_project_tables_as_one_long_csv(capsys: pytest.CaptureFixture[str], example_db: str) -> None:
    code, out, err = run_table(
        capsys, "--project", "example", "--by", "group", "--db", example_db, "--format", "csv"
    )
    assert code == 0 and "Embodied (hardware" in err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["table"].split(":")[0] for r in rows} == {"Table 1", "Table 2", "Table 3"}
    total = {r["column"]: r["value"] for r in rows if r["row"] == "Total (example)"}
    assert total["Runs"] == str(len(EXAMPLE_RUNS)) and "Embodied (tCO2eq)" in total


def test_h100_embodied_per_gpu_hour_is_the_papers() -> None:
    h100, assumed = device_catalog().get("")
    assert (h100.name, assumed) == ("H100", True)
    assert h100.embodied_kg_per_gpu_hour == pytest.approx(0.013, abs=0.0005)  # 463 kg / 4 years
    assert h100.embodied_l_per_gpu_hour == pytest.approx(0.003, abs=0.0001)  # 102.6 L / 4 years
    assert "arXiv 2503.05804" in h100.embodied_source()


def test_an_unknown_device_model_has_no_figures_rather_than_another_devices(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("tpu", RunSpec(project="p", site="jupiter", device_model="TPU v5p"))
    row = EnergyInterval.of("h", "chip-0", Kind.GPU, Source.COUNTER, H0, H0 + 3600, 3.6e8, 3.6e8, 3.6e8)
    ledger.record_intervals(run.id, [row])  # type: ignore[arg-type]
    ledger.engine.dispose()
    code, out, _ = run_table(capsys, "--project", "p", "--by", "phase", "--db", url, "--format", "markdown")
    assert code == 0
    assert markdown_tables(out)[0][-1]["Embodied (tCO2eq)"] == "-"
    assert "No sourced embodied figures for TPU v5p" in out
