"""What `wattlog agent` and `wattlog node` print at the end: each device's energy, band and source.

The table is a :class:`~wattlog.accounting.publishing.fitted.FittedTable`, as `wattlog table`
prints: a grid when it fits the terminal, else one block per device, so no figure
is ever cut at 60 or 80 columns. Energies read in the unit of their size (J, Wh,
kWh). A device's caveats are numbered footnotes under the table (its cell carries
the number), not a wall of text inside a column.
"""

from __future__ import annotations

from rich.console import Console

from wattlog.accounting.ledger.completeness import Completeness
from wattlog.accounting.publishing.fitted import FittedTable
from wattlog.accounting.units import readable, readable_range
from wattlog.telemetry.agent import Agent
from wattlog.telemetry.agent_cli import health_line
from wattlog.telemetry.types import DeviceEnergy

TITLE = "Energy measured (band: where the true value lies)"
HEADERS = ["Device", "Kind", "Source", "Energy", "Band", "Reads", "Gaps"]
_RIGHT = frozenset({3, 4, 5, 6})


def device_grid(rows: list[DeviceEnergy]) -> FittedTable:
    """One line per device and a total; each device's notes as one numbered footnote.

    >>> device_grid([]).cells
    []
    """
    cells: list[list[str]] = []
    notes: list[str] = []
    for row in rows:
        said = [*row.notes, *(["lost: no readings since it was marked lost"] if row.lost else [])]
        device = row.device.uuid
        if said:
            notes.append(f"[{len(notes) + 1}] {device}: {'; '.join(said)}")
            device = f"{device} [{len(notes)}]"
        cells.append(
            [
                device,
                str(row.device.kind),
                str(row.device.source),
                readable(row.energy_j, "energy"),
                _band(row.low_j, row.high_j),
                str(row.samples),
                _gaps(row.gap_count, row.gap_s),
            ]
        )
    if rows:
        sources = " + ".join(sorted({str(r.device.source) for r in rows}))  # wraps at its spaces
        low, high = sum(r.low_j for r in rows), sum(r.high_j for r in rows)
        total = readable(sum(r.energy_j for r in rows), "energy")
        cells.append(["total", "", sources, total, _band(low, high), "", ""])
    return FittedTable(HEADERS, cells, notes, _RIGHT, title=TITLE)


def print_ending(agent: Agent, console: Console, who: str, exit_code: int, done: Completeness) -> int:
    """Print what a closed agent measured (each device's energy, band and source) and its health.

    Args:
        agent: The closed agent.
        console: Where the table goes; an incomplete run's line goes to stderr.
        who: The command's name in that line (e.g. "wattlog agent").
        exit_code: The exit code so far (the command's).
        done: What of the run is not in the ledger (Recording.completeness).

    Returns:
        `exit_code`, or INCOMPLETE_EXIT when it was 0 but the run is not all stored (done.exit_code).
    """
    console.print(device_grid(agent.snapshot()))
    stats = agent.stats()
    if stats is not None:
        console.print(health_line(stats))
    if not done.complete:
        line = done.line(who, agent.config.run)
        Console(stderr=True, highlight=False, soft_wrap=True).print(line, markup=False)
    return done.exit_code(exit_code)


def _band(low_j: float, high_j: float) -> str:
    """The band in one unit, without spaces around its dash ("3.61-10.8 J"): narrow tables keep it whole."""
    return readable_range(low_j, high_j, "energy").replace(" - ", "-")


def _gaps(count: int, seconds: float) -> str:
    """ "0", or the count and their seconds: "2 (1.25 s)"."""
    return "0" if not count else f"{count} ({seconds:.2f} s)"
