"""The report's HTML: Table 19 that stacks on a narrow screen, and a printable page of a run's figures.

No Streamlit here. Table 19 is plain HTML rather than `st.table`: it needs none of the
browser-side table code (Arrow, ~0.8 MB of script), so it draws with the headline, and
its own CSS stacks each row into a card below 900 px so that no column hides behind a
sideways scroll. Each cell carries its column's name, shown only when stacked.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from wattlog.accounting.publishing.render import footnotes, format_figure, readable_amount, table_cells
from wattlog.accounting.units import mwh_of

if TYPE_CHECKING:
    from wattlog.dashboards.report.data import RunSummary

TABLE_CLASS = "wl-t19"
STACK_BELOW_PX = 900
"""Below this width each row of Table 19 becomes a card (its 11 columns do not fit side by side)."""

TABLE_CSS = f"""
table.{TABLE_CLASS} {{border-collapse: collapse; width: 100%; font-size: 0.85rem; margin-bottom: 0.5rem}}
.{TABLE_CLASS} th, .{TABLE_CLASS} td {{border-bottom: 1px solid #ddd; padding: 0.3rem 0.4rem;
  text-align: right; vertical-align: top}}
.{TABLE_CLASS} thead th {{font-weight: 600; vertical-align: bottom}}
.{TABLE_CLASS} th:first-child {{text-align: left}}
.{TABLE_CLASS} tbody tr:first-child {{background: #eef5fb}}
.{TABLE_CLASS} .wl-label {{display: none}}
@media (max-width: {STACK_BELOW_PX - 1}px) {{
  .{TABLE_CLASS} thead {{display: none}}
  .{TABLE_CLASS} tbody {{display: block}}
  .{TABLE_CLASS} tr {{display: grid; grid-template-columns: repeat(auto-fill, minmax(10rem, 1fr));
    gap: 0.3rem 0.8rem; border: 1px solid #ccc; border-radius: 6px; padding: 0.4rem 0.6rem;
    margin-bottom: 0.6rem}}
  .{TABLE_CLASS} th[scope=row] {{grid-column: 1 / -1; border: none; padding: 0}}
  .{TABLE_CLASS} td {{display: flex; flex-direction: column; border: none; text-align: left; padding: 0}}
  .{TABLE_CLASS} .wl-label {{display: block; font-size: 0.75rem; color: #555}}
}}
"""
PRINT_CSS = """
@media print {
  header, [data-testid="stToolbar"], [data-testid="stDownloadButton"],
  [data-testid="stSelectbox"] {display: none}
  [data-testid="stVegaLiteChart"], table {break-inside: avoid}
}
"""
"""The live page printed from the browser: no toolbar, picker or buttons, charts not cut in two."""


def table19_html(summary: RunSummary) -> str:
    """Table 19 with its stacking CSS and the page's print CSS, for `st.html`."""
    return f"<style>{TABLE_CSS}{PRINT_CSS}</style>{table19_table(summary)}"


def table19_table(summary: RunSummary) -> str:
    """Table 19 (the run's row first, then the paper's) as an HTML table (styled by TABLE_CSS).

    Cells are the same text `wattlog table` prints (accounting.publishing.render.table_cells), escaped:
    "-" is a dash, never Markdown.
    """
    headers, cells = table_cells(summary.rows)
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = []
    for row in cells:
        name = f'<th scope="row">{escape(row[0])}</th>'
        rest = "".join(
            f'<td><span class="wl-label">{escape(h)}</span><span class="wl-value">{escape(c)}</span></td>'
            for h, c in zip(headers[1:], row[1:], strict=True)
        )
        body.append(f"<tr>{name}{rest}</tr>")
    return (
        f'<table class="{TABLE_CLASS}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def headline_figures(summary: RunSummary) -> list[tuple[str, str, str]]:
    """(label, readable figure, Table-19 figure with its unit) of energy, CO2 and water; [] without energy."""
    fp = summary.footprint
    if fp is None:
        return []
    it_mwh = mwh_of(fp.it_energy_j)
    return [
        (
            "Energy (IT)",
            readable_amount("total_power_mwh", it_mwh),
            f"{format_figure('total_power_mwh', it_mwh)} MWh",
        ),
        (
            "Emissions (CO2eq)",
            readable_amount("co2_t", fp.co2_t),
            f"{format_figure('co2_t', fp.co2_t)} tCO2eq",
        ),
        ("Water", readable_amount("water_kl", fp.water_kl), f"{format_figure('water_kl', fp.water_kl)} kL"),
    ]


def validity_line(summary: RunSummary) -> str:
    """Whether the run's figures may be published, with the gate's reasons ("-": no energy, not gated)."""
    row = summary.rows[0] if summary.footprint is not None and summary.rows else None
    if row is None or row.validity is None:
        return "Validity: -"
    if row.validity:
        return f"NOT VALID to publish: {'; '.join(row.validity)}"
    return "Valid to publish: every validity check passed"


_PAGE_CSS = """
body {font-family: system-ui, sans-serif; margin: 2rem; color: #222; max-width: 70rem}
h1 {font-size: 1.5rem; margin-bottom: 0.2rem}
.facts {color: #555; margin-top: 0}
.figures {display: flex; gap: 3rem; margin: 1rem 0}
.figures div span {display: block}
.figures .value {font-size: 1.6rem; font-weight: 600}
.figures .paper {color: #555; font-size: 0.8rem}
.notes {font-size: 0.75rem; color: #444}
.validity {font-weight: 600}
.validity.invalid {color: #b00020}
@media print {
  @page {size: A4 landscape; margin: 12mm}
  body {margin: 0; max-width: none}
  table {break-inside: avoid}
}
"""


def printable_page(summary: RunSummary, facts: str, read_at: str) -> str:
    """A self-contained HTML page of the run's first figures, Table 19 and its notes, laid out for print.

    Args:
        summary: The run's summary.
        facts: The line under the title (model, site, status, times), as the page shows it.
        read_at: When the figures were read from the ledger (UTC text).
    """
    run = summary.run
    figures = (
        "".join(
            f'<div><span>{escape(label)}</span><span class="value">{escape(value)}</span>'
            f'<span class="paper">{escape(paper)}</span></div>'
            for label, value, paper in headline_figures(summary)
        )
        or "<div>This run recorded no energy yet.</div>"
    )
    source = summary.footprint.energy_source if summary.footprint else "-"
    validity = validity_line(summary)
    verdict = "validity invalid" if validity.startswith("NOT VALID") else "validity"
    notes = "".join(f"<li>{escape(note)}</li>" for note in footnotes(summary.rows))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>Carbon report: {escape(run.name)}</title><style>{_PAGE_CSS}{TABLE_CSS}</style></head><body>"
        f'<h1>Carbon report: {escape(run.name)}</h1><p class="facts">{escape(facts)}</p>'
        f'<div class="figures">{figures}</div><p class="{verdict}">{escape(validity)}</p>'
        f"<p><b>Energy source:</b> {escape(source)} · <b>Training:</b> {escape(summary.speed_text())}</p>"
        f"<h2>Table 19: this run beside the OLMo 2 paper's rows</h2>{table19_table(summary)}"
        f'<ol class="notes">{notes}</ol>'
        f'<p class="notes">Read from the ledger at {escape(read_at)} by wattlog.</p></body></html>'
    )
