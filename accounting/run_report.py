"""What `wattlog demo` and `wattlog run` print at the end: the run beside Table 19, and its split.

The Table-19 layout keeps the paper's MWh, tonnes and kilolitres; a small run
then reads "0.0000138", so the run's figures follow in readable units (Wh and
g for a one-minute demo). The run's own row is printed last, after the
published rows, so it is on screen when the command ends.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from wattlog.accounting.ledger import Ledger, describe_url
from wattlog.accounting.reference import reference_table_rows
from wattlog.accounting.render import TableFormat, footnotes, readable_summary, render, show
from wattlog.accounting.run_table import TableOptions, run_row
from wattlog.accounting.sites import site_catalog
from wattlog.accounting.split import Use, energy_split
from wattlog.accounting.units import readable


def split_table(ledger: Ledger, run: str) -> Table:
    """The run's energy by use, in readable units and as a share, with the energy's source label."""
    split = energy_split(ledger, run)
    table = Table(title=f"Where the energy of {run} went (source: {split.source})")
    table.add_column("Use", overflow="fold")
    table.add_column("Energy", justify="right", no_wrap=True)
    table.add_column("Share", justify="right", no_wrap=True)
    for use in Use:
        joules = split.joules[use]
        table.add_row(split.label(use), readable(joules, "energy"), f"{split.share(use):.1%}")
    table.add_row("total", readable(split.total_j, "energy"), "100.0%", style="bold")
    return table


def print_run_report(ledger: Ledger, run: str, db: str | None, console: Console | None = None) -> None:
    """Print the published rows, then the run's row; its figures in readable units; its energy split."""
    console = console or Console()
    row = run_row(ledger, ledger.get_run(run), TableOptions(catalog=site_catalog()))
    rows = [*reference_table_rows(table19_only=True), row]
    show(render(rows, TableFormat.RICH, footnotes(rows)), console)
    console.print(split_table(ledger, run))
    console.print(f"Ledger: {describe_url(db)}  (`wattlog table {run} --db ...` prints this row again)")
    # Last, so the run's own figures are what the terminal shows when the command ends.
    console.print(readable_summary(row), highlight=False, markup=False)
