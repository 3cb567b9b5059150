"""The published rows: Table 19 reproduced cell for cell, and recomputed from its own inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattlog.accounting.publishing.reference import (
    ReferenceRow,
    _row,
    recomputed_figures,
    reference_rows,
    reference_table_rows,
    table19_rows,
)
from wattlog.accounting.publishing.render import FIGURE_COLUMNS, HEADERS, MISSING, table_cells, to_markdown
from wattlog.errors import ConfigError

TABLE_19 = Path(__file__).parent / "data" / "table19.md"  # a copy of ../shared/TABLE19.md, the print


def printed_table() -> list[list[str]]:
    """Rows of the print: model then the six figure cells, as the paper prints them."""
    lines = [line for line in TABLE_19.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines[1:]]


def test_every_cell_of_table_19_is_reproduced() -> None:
    expected = printed_table()
    assert len(expected) == 5 and all(len(row) == 7 for row in expected)
    headers, cells = table_cells(reference_table_rows(table19_only=True))
    columns = [headers.index(HEADERS[c]) for c in ("model", *FIGURE_COLUMNS)]
    got = [[row[i] for i in columns] for row in cells]
    assert got == expected  # "-" cells, "1.29 - 4.26", "1,450 - 4,823" and "1,022" included


def test_markdown_and_the_terminal_show_the_same_cells() -> None:
    text = to_markdown(reference_table_rows(table19_only=True))
    for row in printed_table():
        line = next(line for line in text.splitlines() if line.startswith(f"| {row[0]} |"))
        assert line.startswith("| " + " | ".join(row) + " |")


def test_opt_is_apart_from_table_19() -> None:
    assert [r.model for r in table19_rows()] == [row[0] for row in printed_table()]
    opt = [r for r in reference_rows() if not r.in_table_19]
    assert [(r.model, dict(r.printed)) for r in opt] == [("OPT-175B", {"co2_t": "75"})]


@pytest.mark.parametrize("row", table19_rows(), ids=lambda r: r.key)
def test_recomputing_from_printed_inputs_gives_the_printed_figures(row: ReferenceRow) -> None:
    for column, figure in recomputed_figures(row).items():
        if column in row.recompute_differs:
            assert figure != row.printed[column]  # the stored note must stay true
        else:
            assert figure == row.printed[column], (row.model, column)


def test_the_disagreements_with_the_formula_are_noted() -> None:
    rows = {r.model: r for r in table19_rows()}
    assert recomputed_figures(rows["Llama 3.1 8B"])["water_kl"] == "1,450 - 4,789"
    assert any("4,823" in n and "4,789" in n for n in rows["Llama 3.1 8B"].notes)
    assert recomputed_figures(rows["OLMo 2 7B"])["water_kl"] == "203"
    assert any("202.8" in n for n in rows["OLMo 2 7B"].notes)
    assert any("0.352" in n and "0.351" in n for n in rows["OLMo 2 13B"].notes)
    for model in ("Llama 2 7B", "Llama 3.1 8B"):
        assert "carbon_intensity_kg_per_kwh" not in rows[model].printed
        assert any("model card" in n or "Llama 2 paper" in n for n in rows[model].notes)


def test_every_row_says_what_its_energy_covers() -> None:
    for row in reference_table_rows():
        assert row.energy_basis in ("it", "facility")
        assert any("PUE" in n for n in row.notes)
        assert row.energy_source == "published"
        assert row.role == "published"


def test_a_facility_energy_row_does_not_apply_pue_twice() -> None:
    raw = {
        "key": "x", "model": "X", "source": "s", "energy_basis": "facility",
        "printed": {"total_power_mwh": "100", "pue": "1.2", "carbon_intensity_kg_per_kwh": "0.332"},
    }  # fmt: skip
    assert recomputed_figures(_row(raw))["co2_t"] == "33"  # 100 x 0.332, not x 1.2 again
    with pytest.raises(ConfigError, match="energy_basis"):
        _row({**raw, "energy_basis": "gpu?"})


def test_missing_cells_print_the_papers_dash() -> None:
    headers, cells = table_cells(reference_table_rows(table19_only=True))
    llama = cells[0]
    assert llama[headers.index(HEADERS["carbon_intensity_kg_per_kwh"])] == MISSING
