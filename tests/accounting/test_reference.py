"""The published rows: Table 19 reproduced figure for figure, and recomputed from its own inputs."""

from __future__ import annotations

import pytest

from wattlog.accounting.reference import (
    recomputed_figures,
    reference_rows,
    reference_table_rows,
    table19_rows,
)
from wattlog.accounting.render import FIGURE_COLUMNS, HEADERS, MISSING, to_csv, to_markdown

TABLE_19_MODELS = ["Llama 2 7B", "Llama 3.1 8B", "OLMo 7B", "OLMo 2 7B", "OLMo 2 13B"]


def _markdown_cells(text: str) -> dict[str, dict[str, str]]:
    lines = [line for line in text.splitlines() if line.startswith("|")]
    headers = [h.strip() for h in lines[0].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    return {row[0]: dict(zip(headers, row, strict=True)) for row in rows}


def test_table_19_has_the_five_rows_in_order_and_opt_apart() -> None:
    assert [r.model for r in table19_rows()] == TABLE_19_MODELS
    opt = [r for r in reference_rows() if not r.in_table_19]
    assert [(r.model, r.printed) for r in opt] == [("OPT-175B", {"co2_t": "75"})]


def test_rows_match_the_figures_design_md_quotes() -> None:
    rows = {r.model: r.printed for r in table19_rows()}
    assert rows["OLMo 2 7B"] == {
        "total_power_mwh": "131", "pue": "1.2", "carbon_intensity_kg_per_kwh": "0.332",
        "co2_t": "52", "wue_l_per_kwh": "1.29", "water_kl": "202",
    }  # fmt: skip
    assert rows["OLMo 2 13B"] == {
        "total_power_mwh": "257", "pue": "1.12", "carbon_intensity_kg_per_kwh": "0.351",
        "co2_t": "101", "wue_l_per_kwh": "3.10", "water_kl": "892",
    }  # fmt: skip
    llama = rows["Llama 2 7B"]
    assert (llama["total_power_mwh"], llama["pue"], llama["wue_l_per_kwh"], llama["water_kl"]) == (
        "74", "1.1", "1.29-4.26", "105-347",
    )  # fmt: skip


def test_rendering_reproduces_every_printed_figure() -> None:
    cells = _markdown_cells(to_markdown(reference_table_rows()))
    for row in reference_rows():
        for column in FIGURE_COLUMNS:
            assert cells[row.model][HEADERS[column]] == row.printed.get(column, MISSING), (row.model, column)
        assert cells[row.model][HEADERS["energy_source"]] == "published"


def test_csv_carries_the_same_figures() -> None:
    text = to_csv(reference_table_rows(table19_only=True))
    assert "OLMo 2 13B,257,1.12,0.351,101,3.10,892,published," in text
    assert "Llama 2 7B,74,1.1,0.385,31,1.29-4.26,105-347,published," in text


@pytest.mark.parametrize("row", table19_rows(), ids=lambda r: r.key)
def test_recomputing_from_printed_inputs_gives_the_printed_figures(row) -> None:  # type: ignore[no-untyped-def]
    for column, figure in recomputed_figures(row).items():
        if column in row.recompute_differs:
            # The stored note must stay true: the recomputation differs, by one in the last digit.
            assert figure != row.printed[column]
            assert abs(float(figure) - float(row.printed[column])) <= 1
        else:
            assert figure == row.printed[column], (row.model, column)


def test_the_papers_own_rows_are_fully_recomputed() -> None:
    rows = {r.model: r for r in table19_rows()}
    for model in ("Llama 2 7B", "OLMo 2 7B", "OLMo 2 13B"):
        assert set(recomputed_figures(rows[model])) == {"co2_t", "water_kl"}


def test_every_row_has_a_source_and_honest_caveats() -> None:
    for row in reference_rows():
        assert row.source
        assert set(row.unchecked) <= set(row.printed)
        assert set(row.recompute_differs) <= set(row.printed)
        notes = " ".join(row.table_row().notes)
        for column in row.unchecked:
            assert column in notes
