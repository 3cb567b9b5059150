"""What `wattlog demo` and `wattlog run` print at the end: the run beside Table 19, and its split."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from wattlog.accounting.ledger import Ledger, describe_url
from wattlog.accounting.reference import reference_table_rows
from wattlog.accounting.render import TableFormat, footnotes, render, show
from wattlog.accounting.run_table import TableOptions, run_row
from wattlog.accounting.sites import site_catalog
from wattlog.accounting.split import Use, energy_split

_LABELS = {
    Use.PRODUCTIVE: "productive training",
    Use.LOST_WORK: "lost work (steps redone after restarts)",
    Use.HEALTH_CHECK: "health checks",
    Use.IDLE: "idle (start-up, shutdown, waiting)",
}


def split_table(ledger: Ledger, run: str) -> Table:
    """The run's energy by use, joules and share, with the energy's source label."""
    split = energy_split(ledger, run)
    table = Table(title=f"Where the energy of {run} went (source: {split.source})")
    table.add_column("Use")
    table.add_column("Energy (J)", justify="right")
    table.add_column("Energy (Wh)", justify="right")
    table.add_column("Share", justify="right")
    for use in Use:
        joules = split.joules[use]
        table.add_row(_LABELS[use], f"{joules:,.1f}", f"{joules / 3600:.4f}", f"{split.share(use):.1%}")
    table.add_row("total", f"{split.total_j:,.1f}", f"{split.total_j / 3600:.4f}", "100.0%", style="bold")
    return table


def print_run_report(ledger: Ledger, run: str, db: str | None, console: Console | None = None) -> None:
    """Print the run's Table-19 row beside the published rows, its energy split and the ledger's place."""
    console = console or Console()
    row = run_row(ledger, ledger.get_run(run), TableOptions(catalog=site_catalog()))
    rows = [*reference_table_rows(table19_only=True), row]
    show(render(rows, TableFormat.RICH, footnotes(rows)), console)
    console.print(f"Energy source of {run}: [bold]{row.energy_source}[/] (every figure carries its label).")
    console.print(split_table(ledger, run))
    console.print(f"Ledger: {describe_url(db)}  (`wattlog table {run} --db ...` prints this row again)")
