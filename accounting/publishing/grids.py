"""Grids of text cells in five formats (rich, Markdown, LaTeX, CSV, HTML): Table 19, sites, windows.

The renderers take headers, rows of already formatted cells and footnotes;
:mod:`wattlog.accounting.publishing.render` builds Table 19's cells and hands them here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Sequence

from rich.console import RenderableType

from wattlog.accounting.publishing.fitted import FittedTable
from wattlog.errors import ConfigError
from wattlog.escape import for_csv, for_html, for_latex, for_markdown, for_terminal
from wattlog.options import TableFormat as TableFormat

MISSING = "-"
"""What a cell shows where the source gives no figure."""


def printable(text: str) -> str:
    """`text` with control characters shown as escapes: a run name's newline never breaks a table row."""
    return for_terminal(text)


def csv_text(text: str) -> str:
    """A text cell for CSV: printable, and never read as a formula by a spreadsheet (:func:`for_csv`).

    >>> csv_text("=1+1"), csv_text("@SUM(A1)"), csv_text("-"), csv_text("-1.5")
    ("'=1+1", "'@SUM(A1)", '-', '-1.5')
    """
    return for_csv(text)


# Grid renderers: headers + cells + footnotes, shared by Table 19 and `wattlog sites`.


def rich_grid(
    headers: Sequence[str], cells: Sequence[Sequence[str]], notes: Sequence[str], right: Collection[int] = ()
) -> FittedTable:
    """A terminal table that never cuts a figure; columns whose index is in `right` are right-aligned."""
    cells = [[for_terminal(c) for c in row] for row in cells]
    return FittedTable(
        [for_terminal(h) for h in headers], cells, [for_terminal(n) for n in notes], frozenset(right)
    )


def markdown_grid(
    headers: Sequence[str], cells: Sequence[Sequence[str]], notes: Sequence[str], right: Collection[int] = ()
) -> str:
    """A Markdown pipe table and a footnote list."""

    def line(items: Sequence[str]) -> str:
        return "| " + " | ".join(for_markdown(i) for i in items) + " |"

    rule = ["---:" if i in right else "---" for i in range(len(headers))]
    out = [line(headers), "|" + "|".join(rule) + "|", *(line(r) for r in cells)]
    if notes:
        out += ["", *(f"- {for_markdown(n)}" for n in notes)]
    return "\n".join(out) + "\n"


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters (and show control characters as escapes)."""
    return for_latex(text)


def latex_grid(
    headers: Sequence[str], cells: Sequence[Sequence[str]], notes: Sequence[str], right: Collection[int] = ()
) -> str:
    """A booktabs tabular and the footnotes in a small flushleft block."""
    spec = "".join("r" if i in right else "l" for i in range(len(headers)))

    def line(items: Sequence[str]) -> str:
        return " & ".join(latex_escape(i) for i in items) + r" \\"

    out = [
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        line(headers),
        r"\midrule",
        *(line(r) for r in cells),
    ]
    out += [r"\bottomrule", r"\end{tabular}"]
    if notes:
        out += [
            r"\begin{flushleft}\footnotesize",
            *(latex_escape(n) + r"\\" for n in notes),
            r"\end{flushleft}",
        ]
    return "\n".join(out) + "\n"


def csv_grid(headers: Sequence[str], cells: Sequence[Sequence[str]], notes: Sequence[str] = ()) -> str:
    """CSV of text cells; a missing figure is an empty field. Notes are not written: a CSV holds data only."""
    del notes
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_text(h) for h in headers])
    writer.writerows([("" if c == MISSING else csv_text(c)) for c in row] for row in cells)
    return buffer.getvalue()


def html_grid(
    headers: Sequence[str], cells: Sequence[Sequence[str]], notes: Sequence[str], right: Collection[int] = ()
) -> str:
    """An HTML table and footnote list, every text escaped."""

    def cell(tag: str, i: int, text: str) -> str:
        align = ' class="num"' if i in right else ""
        return f"<{tag}{align}>{for_html(text)}</{tag}>"

    out = ['<table class="wattlog-table">', "<thead><tr>"]
    out += [cell("th", i, h) for i, h in enumerate(headers)]
    out += ["</tr></thead>", "<tbody>"]
    for row in cells:
        out.append("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    if notes:
        out += ['<ul class="wattlog-notes">', *(f"<li>{for_html(n)}</li>" for n in notes), "</ul>"]
    return "\n".join(out) + "\n"


def render_grid(
    headers: Sequence[str],
    cells: Sequence[Sequence[str]],
    notes: Sequence[str],
    fmt: TableFormat | str,
    right: Collection[int] = (),
) -> RenderableType:
    """Render any grid of text cells in `fmt` (used by `wattlog sites`)."""
    fmt = TableFormat(fmt)
    if fmt is TableFormat.CSV:
        return csv_grid(headers, cells, notes)
    if fmt in (TableFormat.JSON, TableFormat.HF):
        raise ConfigError(f"--format {fmt} is for `wattlog table`; use rich, markdown, latex, csv or html")
    if fmt is TableFormat.RICH:
        return rich_grid(headers, cells, notes, right)
    grids = {TableFormat.MARKDOWN: markdown_grid, TableFormat.LATEX: latex_grid, TableFormat.HTML: html_grid}
    return grids[fmt](headers, cells, notes, right)
