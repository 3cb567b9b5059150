"""Fault: outside text (run and site names) reached each output raw.

On 38e5f82 `wattlog runs --format csv` printed `=HYPERLINK(...)`, `+cmd|...` and
`@SUM(...)` run names raw, and the notes under tables printed raw newlines, TAB, CR
and ESC sequences. Now one function per output escapes it (wattlog/escape.py).
"""

from __future__ import annotations

import csv
import io
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.publishing.grids import render_grid
from wattlog.cli import main
from wattlog.escape import for_csv, for_html, for_latex, for_markdown, for_terminal

NAMES = ['=HYPERLINK("http://x/?"&A1,"click")', "+cmd|' /C calc'!A0", "@SUM(A1:A9)", "-2+3"]
EVIL = "site\x1b[2J\x1b]0;pwned\x07\r\tname\nnext\u202e"


def test_runs_as_csv_never_hand_a_spreadsheet_a_formula(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/l.db"
    ledger = Ledger(make_engine(url))
    for name in NAMES:
        ledger.start_run(name)
    assert main(["runs", "--db", url, "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    names = [row[0] for row in rows[1:]]
    assert sorted(names) == sorted("'" + n for n in NAMES)


@pytest.mark.parametrize("fmt", ["rich", "markdown", "latex", "html", "csv"])
def test_no_output_carries_a_control_character(fmt: str) -> None:
    rendered = render_grid(["Run", "Site"], [[EVIL, EVIL]], [f"run {EVIL} at {EVIL}"], fmt)
    if isinstance(rendered, str):
        text = rendered
    else:
        console = Console(file=io.StringIO(), width=300, color_system=None, force_terminal=False)
        console.print(rendered)
        text = console.file.getvalue()  # type: ignore[attr-defined]
    assert not [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")], repr(text)
    assert "x1b[2J" in text  # shown, not obeyed


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60))
def test_each_escape_keeps_its_promise(text: str) -> None:
    for escaped in (for_terminal(text), for_csv(text), for_markdown(text), for_latex(text), for_html(text)):
        assert not [c for c in escaped if unicodedata.category(c) == "Cc"]
    cell = for_csv(text)
    assert not cell.startswith(("=", "+", "-", "@")) or cell == "-" or _number(cell)
    assert "|" not in for_markdown(text).replace("\\|", "")
    assert "<" not in for_html(text) and "<" not in for_markdown(text)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
