"""Nothing is ever cut: Table 19 and a demo's row at 80 and 60 columns, wider, and into a non-terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from wattlog.accounting.publishing.footprint import WaterConvention
from wattlog.accounting.publishing.reference import reference_table_rows
from wattlog.accounting.publishing.render import TableRow, footnotes, table_cells, to_rich
from wattlog.accounting.ranges import Range


def demo_row() -> TableRow:
    """What a one-minute CPU demo gives: tiny figures that used to print as 1.38e-07 and be cut."""
    return TableRow(
        model="gpt-small (demo-20261203-071500, final)",
        energy_j=1.38e-07 * 3.6e9,  # 0.000000138 MWh
        pue=1.58,
        carbon_intensity_kg_per_kwh=0.436,
        co2_t=9.51e-08,
        wue_l_per_kwh=Range(1.29, 4.26),
        water_kl=Range(2.81e-07, 9.29e-07),
        energy_source="estimated",
        energy_band_j=Range(6.9e-08 * 3.6e9, 2.07e-07 * 3.6e9),
        convention=WaterConvention.PAPER,
        notes=(
            "site world: PUE and WUE from the site catalog",
            "carbon intensity: 0.436 kg/kWh (Ember 2023)",
        ),
    )


def flat(text: str) -> str:
    return " ".join(text.split())


def rendered(width: int | None, *, terminal: bool = True) -> str:
    rows = [*reference_table_rows(table19_only=True), demo_row()]
    buffer = io.StringIO()
    console = (
        Console(file=buffer, width=width, force_terminal=True, color_system=None)
        if terminal
        else Console(file=buffer, color_system=None)  # a file: not a terminal, rich's default width
    )
    console.print(to_rich(rows, footnotes(rows)))
    return buffer.getvalue()


def assert_nothing_cut(out: str, width: int) -> None:
    rows = [*reference_table_rows(table19_only=True), demo_row()]
    headers, cells = table_cells(rows)
    tokens = {t.rstrip(":") for t in out.split()}
    for item in [*headers, *(c for row in cells for c in row)]:
        for word in item.split():  # a grid may wrap a cell at its spaces, never inside a word
            assert word in tokens, (item, word)
    text = flat(out)
    for note in footnotes(rows):
        assert flat(note) in text, note  # notes are paragraphs: whole and in order
    assert "…" not in out and "e-0" not in out
    assert max(len(line) for line in out.splitlines()) <= width


@pytest.mark.parametrize("width", [60, 80, *range(41, 240, 9)])
def test_every_header_number_and_note_is_whole_at_any_width(width: int) -> None:
    assert_nothing_cut(rendered(width), width)


def test_a_non_terminal_gets_everything_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS")  # what a pipe without COLUMNS gets: rich's 80
    out = rendered(None, terminal=False)
    assert_nothing_cut(out, 80)


def test_the_runs_row_comes_after_the_published_rows() -> None:
    out = rendered(80)
    assert out.index("gpt-small (demo-20261203-071500") > out.index("OLMo 2 13B")
    # beside the paper's rows, the paper's unit in a power of ten (issue 44), never 1.38e-07 MWh; its
    # figures in units of their size in the note under the table
    assert "1.38x10^-7" in out and "IT energy 0.138 Wh, emissions 95.1 mg" in " ".join(out.split())
    assert "e-0" not in out


def test_wide_enough_is_a_grid_and_narrow_is_stacked() -> None:
    assert "Total power (MWh): 1.38x10^-7" in rendered(60)
    wide = rendered(220)
    assert "Total power (MWh): " not in wide and "Total power (MWh)" in wide
