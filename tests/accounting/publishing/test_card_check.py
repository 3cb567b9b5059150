"""`wattlog card check FILE`: the four published faults flagged, consistent cards left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from wattlog.accounting.publishing.disclosure.cards import check_card
from wattlog.cli import full_app
from wattlog.errors import ConfigError

CARDS = Path(__file__).parents[2] / "data" / "cards"


def test_the_llama_2_cards_total_counts_the_unlisted_34b() -> None:
    findings = check_card(CARDS / "llama2_card.md")
    assert [(f.check, f.where) for f in findings] == [
        ("totals vs rows", "Time (GPU hours)"),
        ("totals vs rows", "Carbon Emitted(tCO2eq)"),
    ]
    assert "total 3311616 but its 3 rows sum to 2,273,278 - 2,273,282" in findings[0].message
    assert "total 539.00 but its 3 rows sum to 385.065 - 385.095" in findings[1].message


def test_the_llama_3_2_cards_logit_generation_hours_carry_no_tonnes() -> None:
    (finding,) = check_card(CARDS / "llama3_2_card.md")
    assert finding.check == "hours vs tonnes" and finding.where == "Total"
    assert "Logit Generation Time" in finding.message and "carry no emissions" in finding.message


def test_the_llama_3_3_card_repeats_3_1s_totals_above_its_one_row_table() -> None:
    findings = check_card(CARDS / "llama3_3_card.md")
    assert [f.check for f in findings] == ["totals vs rows", "totals vs rows"]
    assert "the text states 39.3M GPU-hours" in findings[0].message
    assert "the text states 11,390 tCO2e, the table's tCO2e come to 2,039.5 - 2,040.5" in findings[1].message


def test_table_19s_llama_3_1_water_upper_bound_does_not_follow_from_its_inputs() -> None:
    (finding,) = check_card(CARDS / "table19.md")
    assert (finding.check, finding.where) == ("water vs energy x WUE", "Llama 3.1 8B")
    assert "1,022 MWh x PUE 1.1 x 4.26 = 4,781.13 - 4,797.06, printed 4,823 (high end)" in finding.message


@pytest.mark.parametrize("card", ["llama2_with_34b.md", "llama3_1_card.csv", "table19_consistent.md"])
def test_consistent_cards_raise_nothing(card: str) -> None:
    assert check_card(CARDS / card) == []


def test_tonnes_that_do_not_follow_from_energy_and_intensity_are_flagged(tmp_path: Path) -> None:
    card = tmp_path / "card.md"
    card.write_text(
        "| Model | Energy (MWh) | PUE | Carbon Intensity (kg CO2e/kWh) | Carbon Emissions (tCO2eq) |\n"
        "|---|---|---|---|---|\n| A | 131 | 1.2 | 0.332 | 52 |\n| B | 131 | 1.2 | 0.332 | 60 |\n",
        encoding="utf-8",
    )
    (finding,) = check_card(card)
    assert (finding.check, finding.where) == ("tonnes vs energy x intensity", "B")


def test_the_command_exits_non_zero_on_a_fault_and_zero_on_a_consistent_card(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(
        full_app(), ["card", "check", str(CARDS / "llama3_2_card.md"), "--format", "markdown"]
    )
    assert bad.exit_code == 1 and "hours vs tonnes" in bad.output and "1 fault(s)" in bad.output
    good = runner.invoke(
        full_app(), ["card", "check", str(CARDS / "llama3_1_card.csv"), "--format", "markdown"]
    )
    assert good.exit_code == 0 and "consistent (no fault found)" in good.output
    empty = tmp_path / "empty.md"
    empty.write_text("no table here\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no energy table"):
        check_card(empty)
