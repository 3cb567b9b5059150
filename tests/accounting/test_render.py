"""Table-19 renderers: columns, rounding as printed, optional GPU/CPU columns, footnotes, escaping."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import pytest
from rich.console import Console

from wattlog.accounting.carbon.sites import get_site
from wattlog.accounting.it_energy import Energy
from wattlog.accounting.publishing.fitted import FittedTable
from wattlog.accounting.publishing.footprint import WaterConvention, footprint_for
from wattlog.accounting.publishing.reference import reference_table_rows
from wattlog.accounting.publishing.render import (
    TableFormat,
    TableRow,
    footnotes,
    format_figure,
    render,
    render_grid,
    show,
    table_cells,
    to_csv,
    to_html,
    to_json,
    to_latex,
    to_markdown,
    to_rich,
)
from wattlog.accounting.ranges import Range
from wattlog.errors import ConfigError
from wattlog.records import EnergyFigure, Kind, Source

MWH_J = 3.6e9


def _run_row(**overrides: object) -> TableRow:
    fields: dict[str, object] = {
        "model": "my_run & co",
        "energy_j": 0.00123 * MWH_J,
        "pue": 1.2,
        "carbon_intensity_kg_per_kwh": 0.332,
        "co2_t": Range(0.0004, 0.0006),
        "wue_l_per_kwh": 1.29,
        "water_kl": 0.0019,
        "energy_source": "counter",
        "energy_band_j": Range(0.0012 * MWH_J, 0.00126 * MWH_J),
        "convention": WaterConvention.PAPER,
    }
    fields.update(overrides)
    return TableRow(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("column", "value", "text"),
    [
        ("total_power_mwh", 131.4, "131"),
        ("total_power_mwh", 0.00123, "0.00123"),
        ("co2_t", Range(9.6, 10.4), "10"),
        ("water_kl", Range(105.006, 346.764), "105 - 347"),
        ("water_kl", Range(1450.2, 4823.0), "1,450 - 4,823"),
        ("total_power_mwh", 1.38e-07, "0.000000138"),
        ("co2_t", 9.51e-08, "0.0000000951"),
        ("pue", 1.2, "1.2"),
        ("pue", 1.12, "1.12"),
        ("pue", 1.0, "1"),
        ("carbon_intensity_kg_per_kwh", 0.61, "0.610"),
        ("wue_l_per_kwh", 3.1, "3.10"),
        ("wue_l_per_kwh", Range(1.29, 4.26), "1.29 - 4.26"),
        ("co2_t", None, "-"),
    ],
)
def test_format_figure_rounds_as_the_paper_prints(column: str, value: object, text: str) -> None:
    assert format_figure(column, value) == text  # type: ignore[arg-type]


def test_columns_follow_table_19_then_source_and_band() -> None:
    headers, cells = table_cells([_run_row()])
    assert headers[:7] == [
        "Model", "Total power (kWh)", "PUE", "Carbon intensity (kg CO2e/kWh)",
        "Emissions (gCO2eq)", "WUE (L/kWh)", "Water (L)",
    ]  # fmt: skip
    assert headers[7:] == ["Energy source", "Energy band (kWh)"]
    # a run's amounts in its columns' units, named in the headers (0.00123 MWh, 0.0004-0.0006 t, 0.0019 kL)
    assert cells[0][1:] == ["1.23", "1.2", "0.332", "400 - 600", "1.29", "1.90", "counter", "1.20 - 1.26"]


def test_gpu_and_cpu_dram_columns_only_when_both_measured() -> None:
    plain = table_cells([_run_row(gpu_j=1.0 * MWH_J)])[0]
    assert not any(h.startswith("GPU energy") for h in plain)
    split = _run_row(gpu_j=0.0009 * MWH_J, host_j=0.00033 * MWH_J)
    headers, cells = table_cells([split, _run_row(model="other")])
    assert headers[-2:] == ["GPU energy (kWh)", "CPU+DRAM energy (kWh)"]  # the total's unit
    assert cells[0][-2:] == ["0.900", "0.330"]  # 0.0009 and 0.00033 MWh
    assert cells[1][-2:] == ["-", "-"]
    assert any("GPUs alone" in n for n in footnotes([_run_row(gpu_j=1.0 * MWH_J, host_j=0.5 * MWH_J)]))


def test_footnotes_say_what_is_left_out_and_the_convention() -> None:
    notes = footnotes([_run_row(notes=("hourly intensity from grid.csv",))])
    text = " ".join(notes)
    assert "embodied" in text and "inference" in text and "lower bounds" in text
    assert "OLMo 2 paper's convention" in text
    assert "my_run & co: hourly intensity from grid.csv" in notes
    green = " ".join(footnotes([_run_row(convention=WaterConvention.GREEN_GRID)]))
    assert "Green Grid" in green and "OLMo 2 paper's convention" not in green


def test_from_footprint_carries_labels_and_hourly_flag() -> None:
    gpu = EnergyFigure(Kind.GPU, Source.COUNTER, 100.0 * 3.6e9, 100.0 * 3.6e9, 100.0 * 3.6e9)
    host = EnergyFigure(Kind.CPU, Source.SAMPLED, 31.0 * 3.6e9, 31.0 * 3.6e9, 31.0 * 3.6e9)
    fp = footprint_for(Energy((gpu, host), gpu_j=100.0 * 3.6e9), get_site("jupiter"))
    row = TableRow.from_footprint("olmo-run", fp, notes=("role: final",))
    assert (row.energy_source, row.co2_t, row.convention) == (
        "counter+sampled",
        fp.co2_t,
        WaterConvention.PAPER,
    )
    assert row.notes[-1] == "role: final"
    hourly = dataclasses.replace(row, hourly_intensity=True)
    assert table_cells([hourly])[1][0][3] == "0.332 (hourly mean)"


def test_markdown() -> None:
    text = to_markdown([_run_row(model="a|b")])
    lines = text.splitlines()
    assert lines[0].startswith("| Model | Total power (kWh) |")
    assert lines[1] == "|---|---:|---:|---:|---:|---:|---:|---|---:|"
    assert "a\\|b" in lines[2]
    assert any(line.startswith("- Left out: embodied") for line in lines)


def test_latex_escapes_specials() -> None:
    text = to_latex([_run_row()])
    assert r"\begin{tabular}{lrrrrrrlr}" in text and r"\toprule" in text and r"\bottomrule" in text
    assert r"my\_run \& co" in text
    assert "my_run & co" not in text


def test_html_escapes_everything() -> None:
    text = to_html([_run_row(model="<script>alert(1)</script>")])
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert text.count("<tr>") == 2 and '<ul class="wattlog-notes">' in text


def test_csv_holds_ranges_as_min_and_max_columns_and_no_comment_lines() -> None:
    text = to_csv([_run_row(pue=None)])
    data = list(csv.DictReader(io.StringIO(text)))
    assert data[0]["model"] == "my_run & co"
    assert data[0]["pue_min"] == data[0]["pue_max"] == ""
    assert (float(data[0]["co2_t_min"]), float(data[0]["co2_t_max"])) == (0.0004, 0.0006)
    assert float(data[0]["total_power_mwh_min"]) == float(data[0]["total_power_mwh_max"]) == 0.00123
    assert not any(line.startswith("#") for line in text.splitlines())


def test_rich_table_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    table = to_rich([_run_row()])
    assert isinstance(table, FittedTable) and len(table.headers) == 9
    assert any("lower bounds" in n for n in table.notes)
    show(table, Console(width=250))
    out = capsys.readouterr().out
    assert "400 - 600 g" in out and "lower bounds" in out


def test_rich_table_keeps_model_and_numbers_whole_at_120_columns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Regression: figure columns that never wrap used to squeeze the Model column to nothing.
    show(to_rich([*reference_table_rows(), _run_row()]), Console(width=120))
    out = capsys.readouterr().out
    assert "OLMo 2 13B" in out and "Llama 3.1 8B" in out
    assert "105 - 347" in out  # a range breaks only at its dash, never inside a number


@pytest.mark.parametrize("fmt", [f for f in TableFormat if f is not TableFormat.HF])
def test_render_dispatches_every_format(fmt: TableFormat) -> None:
    out = render([_run_row()], fmt)
    if fmt is TableFormat.RICH:
        assert isinstance(out, FittedTable)
    elif fmt is TableFormat.HF:
        raise AssertionError("hf is refused")
    else:
        # grids show a run's energy in its readable unit; CSV and JSON the number in MWh
        shown = "0.00123" if fmt in (TableFormat.CSV, TableFormat.JSON) else "1.23 kWh"
        assert isinstance(out, str) and shown in out


def test_render_rejects_unknown_format_and_grid_renders_text() -> None:
    with pytest.raises(ValueError):
        render([_run_row()], "pdf")
    with pytest.raises(ConfigError, match="one run"):
        render([_run_row()], "hf")
    grid = render_grid(["A", "B"], [["x", "1"]], ["note"], "markdown", right={1})
    assert grid == "| A | B |\n|---|---:|\n| x | 1 |\n\n- note\n"


def test_a_rows_energy_is_joules_and_the_exports_carry_the_measured_joules_exactly() -> None:
    """MWh is what a cell prints, not what the row holds: the joules are not rounded through MWh."""
    figure = EnergyFigure(Kind.GPU, Source.COUNTER, 442_800_000.0, 433_944_000.0, 451_656_000.0)
    row = TableRow.from_footprint("r", footprint_for(Energy((figure,)), get_site("jupiter")))
    assert (row.energy_j, row.energy_band_j) == (442_800_000.0, Range(433_944_000.0, 451_656_000.0))
    assert row.figure("total_power_mwh") == 0.123  # the column's unit, computed where it is read
    data = json.loads(to_json([row]))["rows"][0]
    assert data["energy_band_j"]["max"] == 451_656_000.0  # through MWh and back: 451655999.99999994
    assert data["figures"]["total_power_mwh"]["value"] == 0.123
    [line] = csv.DictReader(io.StringIO(to_csv([row])))
    assert (line["energy_band_j_max"], line["total_power_mwh_min"]) == ("451656000.0", "0.123")
