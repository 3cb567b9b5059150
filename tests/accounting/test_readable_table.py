"""A person reads a small run's figures in units of their size; a run without a site still shows its energy.

Before, a 28.5 Wh run read "0.0000285" in the "Total power (MWh)" column, CSV and JSON
gave "7.16e-09" MWh only, and a run recorded without a site showed "-" and source
"none" although the ledger held its joules.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.publishing.exports import rows_csv, rows_json
from wattlog.accounting.publishing.reference import reference_table_rows
from wattlog.accounting.publishing.render import TableRow, table_cells
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.accounting.ranges import Range
from wattlog.records import EnergyInterval, Kind, Source

H0 = 1_767_225_600.0
MWH_J = 3.6e9


def small_row(**changes: object) -> TableRow:
    fields: dict[str, object] = {
        "model": "mine",
        "energy_j": 2.85e-05 * MWH_J,  # 28.5 Wh
        "pue": 1.2,
        "carbon_intensity_kg_per_kwh": 0.4,
        "co2_t": 1.14e-05,  # 11.4 g
        "wue_l_per_kwh": 1.29,
        "water_kl": 1.46e-08,  # 14.6 microlitres: below a litre, shown in L
        "energy_source": "counter",
        "energy_band_j": Range(2.7e-05 * MWH_J, 3.0e-05 * MWH_J),
    }
    fields.update(changes)
    return TableRow(**fields)  # type: ignore[arg-type]


def test_a_users_rows_alone_read_in_one_unit_per_column_chosen_by_its_largest_value() -> None:
    headers, cells = table_cells([small_row(), small_row(model="half", energy_j=0.5 * 2.85e-05 * MWH_J)])
    by_model = {row[0]: dict(zip(headers, row, strict=True)) for row in cells}
    mine = by_model["mine"]
    assert mine["Total power (Wh)"] == "28.5" and by_model["half"]["Total power (Wh)"] == "14.2"
    assert mine["Emissions (gCO2eq)"] == "11.4"
    assert mine["Water (uL)"] == "14.6"  # was "0.0000146 L"
    assert mine["Energy band (Wh)"] == "27.0 - 30.0"


def test_beside_the_papers_rows_every_row_is_in_the_papers_unit() -> None:
    # used to mix units in a column: "28.5 Wh" under "Total power (MWh)" beside the paper's "1,022"
    published = reference_table_rows(table19_only=True)
    headers, cells = table_cells([*published, small_row(), small_row(model="big", energy_j=131.4 * MWH_J)])
    by_model = {row[0]: dict(zip(headers, row, strict=True)) for row in cells}
    mine = by_model["mine"]
    assert mine["Total power (MWh)"] == "2.85x10^-5"  # beyond six digits: a power of ten
    assert mine["Emissions (tCO2eq)"] == "1.14x10^-5" and mine["Water (kL)"] == "1.46x10^-8"
    assert by_model["big"]["Total power (MWh)"] == "131"
    olmo = by_model["OLMo 2 7B"]
    assert olmo["Total power (MWh)"] == "131" and olmo["Emissions (tCO2eq)"] == "52"
    units = ("Wh", " J", " g", " L", "kL", "MWh")
    assert not any(u in cell for row in cells for cell in row[1:7] for u in units)  # the header's unit only
    assert all("e-" not in cell for row in cells for cell in row)  # never scientific notation


def test_a_missing_figure_stays_a_dash() -> None:
    headers, [cells] = table_cells([small_row(co2_t=None, water_kl=None)])
    row = dict(zip(headers, cells, strict=True))
    assert row["Emissions (tCO2eq)"] == "-" and row["Water (kL)"] == "-"


def test_csv_and_json_carry_joules_beside_mwh_and_no_exponent() -> None:
    row = small_row(energy_j=7.16e-09 * MWH_J, energy_band_j=Range(7e-09 * MWH_J, 7.3e-09 * MWH_J))
    text = rows_csv([row])
    assert "e-0" not in text and "E-0" not in text
    [line] = csv.DictReader(io.StringIO(text))
    assert line["total_power_mwh_min"] == "0.00000000716"
    assert float(line["total_power_j_min"]) == float(line["total_power_j_max"]) == 7.16e-09 * MWH_J
    assert float(line["energy_band_j_min"]) == 7e-09 * MWH_J
    document = rows_json([row], [])
    assert "e-0" not in document
    data = json.loads(document)["rows"][0]
    assert data["figures"]["total_power_mwh"]["min"] == 7.16e-09
    assert data["energy_j"]["value"] == 7.16e-09 * MWH_J
    assert data["figures"]["total_power_mwh"]["text"] == "25.8 J"


def test_a_run_without_a_site_shows_its_energy_and_source_and_says_what_to_pass(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'ledger.db'}"))
    run = ledger.start_run("nosite")
    rows = [EnergyInterval.of("n0", "GPU-0", Kind.GPU, Source.COUNTER, H0, H0 + 60, 102_600.0, 1e5, 1.05e5)]
    ledger.record_intervals(run.id, rows)
    row = run_row(ledger, ledger.get_run("nosite"), TableOptions(catalog=site_catalog()))
    headers, [cells] = table_cells([row])
    shown = dict(zip(headers, cells, strict=True))
    assert shown["Total power (Wh)"] == "28.5" and shown["Energy source"] == "counter"
    assert shown["Energy band (Wh)"] == "27.8 - 29.2"
    assert shown["Emissions (tCO2eq)"] == "-" and shown["Water (kL)"] == "-"
    assert any("pass --site NAME" in note for note in row.notes)
