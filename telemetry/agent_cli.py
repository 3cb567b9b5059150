"""What `wattlog agent` and `wattlog node` share: run or wait under the supervisor, then print the end.

The commands themselves live in :mod:`wattlog.accounting.node_cli`, above the
ledger, so both record through the one composition root
(:mod:`wattlog.accounting.recording`). After a run they print one row per device
(energy in J and Wh with its band and source label, samples, gaps, notes) and
the sampler's health, and say so when energy rows are not all stored.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from wattlog.telemetry.agent import Agent
from wattlog.telemetry.sampler import SamplerStats
from wattlog.telemetry.sinks import INCOMPLETE_EXIT
from wattlog.telemetry.supervise import Ending, Outcome, Supervisor
from wattlog.telemetry.types import DeviceEnergy


def print_ending(agent: Agent, console: Console, who: str, exit_code: int) -> int:
    """Print what a closed agent measured (each device's energy, band and source) and its health.

    Args:
        agent: The closed agent.
        console: Where the table goes; a loss goes to stderr in one line.
        who: The command's name in that line (e.g. "wattlog agent").
        exit_code: The exit code so far (the command's).

    Returns:
        `exit_code`, or INCOMPLETE_EXIT when it was 0 but rows are not all stored.
    """
    console.print(devices_table(agent.snapshot()))
    stats = agent.stats()
    if stats is not None:
        console.print(health_line(stats))
    if not agent.unwritten_rows:
        return exit_code
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"{who}: incomplete: {agent.unwritten_rows} energy rows could not be written", markup=False
    )
    return exit_code or INCOMPLETE_EXIT


def run_or_wait(
    supervisor: Supervisor, command: list[str] | None, seconds: float | None, console: Console, who: str
) -> Outcome:
    """Run `command` under `supervisor` (without one: wait for the time or a signal); say why it ended.

    Args:
        supervisor: The open supervisor (it forwards SIGTERM/SIGINT to the command).
        command: What to run; None or empty: only wait.
        seconds: Time limit (None: until the command exits, or until Ctrl-C without one).
        console: Where to print the one-line reasons.
        who: The command's name in those lines (e.g. "wattlog agent").
    """
    if command:
        outcome = supervisor.run(command, timeout_s=seconds)
    else:
        if seconds is None:
            console.print("sampling until Ctrl-C")
        outcome = supervisor.wait(seconds)
    if outcome.message and outcome.ending is not Ending.FAILED:
        console.print(f"{who}: {outcome.message}")
    return outcome


def devices_table(rows: list[DeviceEnergy]) -> Table:
    """One row per device: energy (J and Wh) with its band and source label, samples, gaps, notes."""
    table = Table(title="energy measured (band: where the true value lies)")
    table.add_column("device", overflow="fold", min_width=13)
    for header in ("kind", "source", "energy J (Wh)", "band J", "samples", "gaps (s)"):
        table.add_column(header, justify="left" if header in ("kind", "source") else "right")
    table.add_column("notes", ratio=1, overflow="fold", min_width=12)
    for row in rows:
        d = row.device
        notes = [*row.notes, *(["lost"] if row.lost else [])]
        table.add_row(
            d.uuid,
            str(d.kind),
            str(d.source),
            _energy(row.energy_j),
            f"{row.low_j:.0f}-{row.high_j:.0f}",
            str(row.samples),
            f"{row.gap_count} ({row.gap_s:.2f})",
            "; ".join(notes),
        )
    if rows:
        band = f"{sum(r.low_j for r in rows):.0f}-{sum(r.high_j for r in rows):.0f}"
        sources = "+".join(sorted({str(r.device.source) for r in rows}))
        table.add_row("total", "", sources, _energy(sum(r.energy_j for r in rows)), band, "", "", "")
    return table


def _energy(joules: float) -> str:
    return f"{joules:.1f} ({joules / 3600:.4f})"


def health_line(stats: SamplerStats) -> str:
    """The sampler's health in one line (achieved period, lateness, overruns, errors)."""

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 1000:.2f} ms"

    return (
        f"sampler: {stats.samples_total} ticks ({stats.idle_ticks_total} slept through, nothing due), "
        f"achieved period {ms(stats.achieved_period_s)}, "
        f"lateness p50 {ms(stats.lateness_p50_s)} p99 {ms(stats.lateness_p99_s)} "
        f"max {ms(stats.lateness_max_s)}, "
        f"{stats.overruns_total} overruns, {stats.errors_total} read errors, CPU {stats.thread_cpu_s:.2f} s"
    )
