"""What a run prints at the end: a few lines of its figures, or (asked) the run beside Table 19.

:func:`print_run_summary` is the default of `wattlog run` and the framework callbacks:
energy with its band and source, CO2 and water (or what to pass for them), the ledger, and
the command that prints the full table. :func:`print_run_report` is that table and the
run's energy split (`--table`, ``table=True``). :func:`print_run_end` chooses between them.

The Table-19 layout keeps the paper's MWh, tonnes and kilolitres; a small run
then reads "0.0000138", so the run's figures follow in readable units (Wh and
g for a one-minute demo). The run's own row is printed last, after the
published rows, so it is on screen when the command ends.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from wattlog.accounting.carbon.sites import run_catalog
from wattlog.accounting.it_energy import energy_label
from wattlog.accounting.ledger import Ledger, describe_url
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.accounting.publishing.reference import reference_table_rows
from wattlog.accounting.publishing.render import (
    TableFormat,
    TableRow,
    footnotes,
    readable_summary,
    render,
    show,
)
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.accounting.publishing.split import energy_split
from wattlog.accounting.ranges import bounds
from wattlog.accounting.units import readable, readable_range, sig3, unit_for


def split_table(ledger: Ledger, run: str) -> Table:
    """The run's energy by use, in readable units and as a share, with the energy's source label."""
    split = energy_split(ledger, run)
    table = Table(title=f"Where the energy of {run} went (source: {split.source})")
    table.add_column("Use", overflow="fold")
    table.add_column("Energy", justify="right", no_wrap=True)
    table.add_column("Share", justify="right", no_wrap=True)
    for use, joules in split.joules.items():
        table.add_row(split.label(use), readable(joules, "energy"), f"{split.share(use):.1%}")
    table.add_row("total", readable(split.total_j, "energy"), "100.0%", style="bold")
    return table


def print_run_report(ledger: Ledger, run: str, db: str | None, console: Console | None = None) -> None:
    """Print the published rows, then the run's row; its figures in readable units; its energy split."""
    console = console or Console()
    row = run_row(ledger, ledger.get_run(run), TableOptions(catalog=run_catalog()))
    rows = [*reference_table_rows(table19_only=True), row]
    show(render(rows, TableFormat.RICH, footnotes(rows)), console)
    console.print(split_table(ledger, run))
    console.print(
        f"Ledger: {describe_url(db)}  (`wattlog table {run} --db ...` prints this row again)", soft_wrap=True
    )
    # Last, so the run's own figures are what the terminal shows when the command ends.
    console.print(readable_summary(row), highlight=False, markup=False)


def summary_lines(ledger: Ledger, run: str, db: str | None) -> list[str]:
    """Energy (band, source), the validity gate's verdict when the run fails it, CO2 and water (or
    what to pass), the ledger, the table's command."""
    info = ledger.get_run(run)
    row = run_row(ledger, info, TableOptions(catalog=run_catalog()))
    db_part = f" --db {db}" if db else ""
    # the last lines a run prints: a figure not fit to publish says so here too, not only in a table
    verdict = [f"NOT VALID to publish: {'; '.join(row.validity)}"] if row.validity else []
    return [
        _energy_line(row, ledger.energy_totals(info.id)),
        *verdict,
        _impact_line(row, info.site),
        f"Ledger: {describe_url(db)}",
        f"Full table beside Table 19: wattlog table {run} --reference{db_part}",
    ]


def print_run_summary(ledger: Ledger, run: str, db: str | None, console: Console | None = None) -> None:
    """Print :func:`summary_lines` (what a run shows at its end unless the full table is asked for)."""
    console = console or Console()
    for line in summary_lines(ledger, run, db):
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def print_run_end(
    ledger: Ledger, run: str, db: str | None, *, table: bool = False, console: Console | None = None
) -> None:
    """What every run prints at its end: :func:`print_run_summary`, or (asked) :func:`print_run_report`.

    `wattlog run`, `wattlog demo`, the Tracker and the HF and Lightning callbacks all end here.
    """
    (print_run_report if table else print_run_summary)(ledger, run, db, console)


def _energy_line(row: TableRow, totals: list[EnergyTotal]) -> str:
    """Energy with its band and source: the table's figure, else (no site) the ledger's per-device sums."""
    energy = row.energy_j
    if energy is not None:
        band = row.energy_band_j if row.energy_band_j is not None else energy
        mid = sum(bounds(energy)) / 2
        lo, hi = bounds(band)
        source = row.energy_source
    elif totals:
        mid = sum(t.energy_j for t in totals)
        lo, hi = sum(t.low_j for t in totals), sum(t.high_j for t in totals)
        source = energy_label(t.source for t in totals)
    else:
        return "Energy: - (no energy recorded)"
    unit, size = unit_for(mid, "energy")  # the band in the figure's unit: "241 J (band 120 - 361 J)"
    within = f"{sig3(lo / size)} - {sig3(hi / size)} {unit}"
    return f"Energy: {readable(mid, 'energy')} (band {within}; source: {source})"


def _impact_line(row: TableRow, site: str) -> str:
    """CO2 and water in readable units, with the site they use; or, without a site, what to pass."""
    co2, water = row.figure("co2_t"), row.figure("water_kl")
    if co2 is None and water is None:
        if not site:
            return "CO2, water: no site given; pass site=... (Python) or --site (CLI), see `wattlog sites`"
        return f"CO2, water: - (site {site})"
    parts = []
    if co2 is not None:
        lo, hi = bounds(co2)
        parts.append(f"CO2 {readable_range(lo * 1e6, hi * 1e6, 'mass')} CO2e")  # t -> g
    if water is not None:
        lo, hi = bounds(water)
        parts.append(f"water {readable_range(lo * 1e3, hi * 1e3, 'volume')}")  # kL -> L
    return f"{', '.join(parts)} (site {site})"
