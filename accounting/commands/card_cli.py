"""`wattlog card reproduce` (the reproduction suite's table) and `wattlog card check FILE` (a card's)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wattlog.accounting.publishing.grids import render_grid
from wattlog.accounting.publishing.render import show
from wattlog.options import FormatOption, TableFormat

SUITE_HEADERS = ["Row", "Figure", "Published", "Reproduced", "Difference", "Rule", "Verdict", "Source"]
CARD_HELP = "Published cards: reproduce the suite of published rows; check a card's energy table."


def reproduce(fmt: FormatOption = TableFormat.RICH) -> None:
    """Recompute every published row of the suite with wattlog's code; exit 1 if one does not reproduce."""
    from wattlog.accounting.publishing.disclosure.suite import reproduce as reproduce_row
    from wattlog.accounting.publishing.disclosure.suite import suite_rows

    rows = suite_rows()
    cells, failed, reproduced, faults = [], 0, 0, 0
    for row in rows:
        found = reproduce_row(row)
        if row.expect_differs:
            verdict = "differs, as known" if found.ok else "REPRODUCES (expected to differ)"
            faults += found.ok
        else:
            verdict = "reproduced" if found.ok else "NOT REPRODUCED"
            reproduced += found.ok
        failed += not found.ok
        cells.append([
            f"{row.model} ({row.key})", f"{row.figure}, {row.unit}", row.published.text, _figure(found.value),
            f"{found.difference * 100:+.3f} %", found.rule, verdict, row.source,
        ])  # fmt: skip
    expected = sum(not row.expect_differs for row in rows)
    notes = [
        f"{reproduced} of {expected} rows reproduced; {faults} known published fault(s) shown and still "
        f"differing; {failed} failure(s).",
        "Within 0.5 % (or the published figure's last digit) where every input has >= 3 significant figures "
        "(stated constants and counts are exact), else within the inputs' and the output's rounding.",
    ]
    show(render_grid(SUITE_HEADERS, cells, notes, fmt, right={2, 3, 4}))
    if failed:
        raise typer.Exit(1)


def _figure(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 10_000 else f"{value:,.6g}"


def check(
    file: Annotated[Path, typer.Argument(help="A model card's or a paper's energy table (Markdown or CSV).")],
    fmt: FormatOption = TableFormat.RICH,
) -> None:
    """Check a card's energy table: totals, tonnes vs energy x intensity, water, hours; exit 1 on a fault."""
    from wattlog.accounting.publishing.disclosure.cards import check_card

    findings = check_card(file)
    cells = [[f.check, f.where, f.message] for f in findings]
    notes = [f"{file}: {len(findings)} fault(s)" if findings else f"{file}: consistent (no fault found)"]
    show(render_grid(["Check", "Where", "Fault"], cells, notes, fmt))
    if findings:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `wattlog card` (reproduce, check) to the root app."""
    card = typer.Typer(name="card", help=CARD_HELP, no_args_is_help=True)
    card.command("reproduce")(reproduce)
    card.command("check")(check)
    app.add_typer(card)
