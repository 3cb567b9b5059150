"""The reproduction suite: >= 30 published rows recomputed by wattlog's estimate and table code."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from wattlog.accounting.publishing.disclosure.suite import Printed, reproduce, suite_rows
from wattlog.cli import full_app

ROWS = suite_rows()


def test_the_suite_holds_at_least_30_sourced_rows_from_every_family_the_issue_names() -> None:
    reproducible = [r for r in ROWS if not r.expect_differs]
    assert len(reproducible) >= 30
    assert all(r.source and r.inputs for r in ROWS)
    text = " ".join(r.source for r in ROWS)
    for family in ("Llama 2", "Llama 3 ", "Llama 3.1", "Llama 3.2", "Llama 4", "OLMo 2 paper", "BLOOM",
                   "Patterson", "Morrison"):  # fmt: skip
        assert family in text, family


@pytest.mark.parametrize("row", ROWS, ids=[r.key for r in ROWS])
def test_each_row_reproduces_by_its_rule_and_each_known_fault_still_differs(row) -> None:  # noqa: ANN001
    found = reproduce(row)
    assert found.ok, (row.key, found.value, found.rule)
    if found.rule == "within 0.5 %" and not row.expect_differs:
        assert abs(found.difference) <= 0.005


def test_printed_figures_keep_their_precision() -> None:
    assert Printed.of("1.46M").value == 1.46e6 and Printed.of("1.46M").half_unit == pytest.approx(5e3)
    assert Printed.of("1,022").figures == 4 and Printed.of("0.385").figures == 3
    assert Printed.exact_of("1.1").half_unit == 0.0


def test_a_wrong_published_figure_is_not_reproduced() -> None:
    # the check can fail: Llama 2 7B's inputs with a tonnage 1 % off
    (seven_b,) = [r for r in ROWS if r.key == "llama-2-7b-co2"]
    from dataclasses import replace

    assert not reproduce(replace(seven_b, published=Printed.of("31.53"))).ok


def test_the_command_prints_row_published_reproduced_difference_source() -> None:
    out = CliRunner().invoke(full_app(), ["card", "reproduce", "--format", "csv"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith("Row,Figure,Published,Reproduced,Difference,Rule,Verdict,Source")
    assert any(
        line.startswith("Llama 2 7B (llama-2-7b-co2),") and ",31.22,31.2238," in line for line in lines
    )
    assert any("differs, as known" in line for line in lines)
    summary = CliRunner().invoke(full_app(), ["card", "reproduce", "--format", "markdown"])
    assert "34 of 34 rows reproduced; 1 known published fault(s)" in summary.output
