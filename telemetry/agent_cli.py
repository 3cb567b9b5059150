"""`wattlog agent`: run the node agent as a sidecar, optionally around a command.

    wattlog agent --seconds 5                      # sample this machine for 5 s
    wattlog agent --port 0 -- python train.py      # measure while the command runs
    wattlog agent --jsonl energy.jsonl -- ./job.sh # and keep every flush interval in a file

It prints where metrics are served, runs until the time is up, the command
exits (its exit code becomes ours), or Ctrl-C/SIGTERM, then prints one row per
device (energy in J and Wh with its band and source label, samples, gaps,
notes) and the sampler's health.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from wattlog.numbers import MAX_SIMULATED_GPUS, check_number, check_port
from wattlog.telemetry.agent import Agent, AgentConfig, default_lock_dir
from wattlog.telemetry.sampler import SamplerStats
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.sinks import INCOMPLETE_EXIT, JsonlSink
from wattlog.telemetry.supervise import Ending, Outcome, Supervisor, cannot_start
from wattlog.telemetry.types import DeviceEnergy


def agent(
    command: Annotated[
        list[str] | None, typer.Argument(help="Command to run and measure (after --); stop when it exits.")
    ] = None,
    seconds: Annotated[float | None, typer.Option(help="Stop after this many seconds.")] = None,
    port: Annotated[
        int, typer.Option(help="Metrics port on 127.0.0.1; 0 picks a free one; -1 serves nothing.")
    ] = 9464,
    period_ms: Annotated[float, typer.Option(help="Sampling period, milliseconds.")] = 25.0,
    flush_s: Annotated[
        float, typer.Option(help="Seconds between flushes to sinks and the Pushgateway.")
    ] = 10.0,
    whole_node: Annotated[bool, typer.Option(help="Measure every GPU, not only the job's.")] = False,
    simulate: Annotated[
        int, typer.Option(min=0, help="Add N simulated GPUs (training-like power, labelled simulated).")
    ] = 0,
    push: Annotated[
        str | None, typer.Option(help="Pushgateway URL to push to at each flush and at the end.")
    ] = None,
    jsonl: Annotated[
        Path | None, typer.Option(help="Append each flush's energy rows and gaps to this JSON Lines file.")
    ] = None,
    lock_dir: Annotated[
        Path | None,
        typer.Option(help="Folder of the device locks every agent of the node shares ($WATTLOG_LOCK_DIR)."),
    ] = None,
    run: Annotated[str, typer.Option(help="The `run` label on every series (tells runs apart).")] = "",
    linger_s: Annotated[
        float,
        typer.Option(help="At the end, serve until the next scrape read the finished mark (at most this)."),
    ] = 30.0,
) -> int:
    """Run the measuring agent (sidecar mode): sample, serve metrics, print what was measured."""
    if seconds is not None:
        check_number("--seconds", seconds, low=0, high=10 * 365 * 86400, low_open=True)
    check_number("--period-ms", period_ms, low=0, high=60_000, low_open=True, hint="the default is 25")
    check_number("--flush-s", flush_s, low=period_ms / 1000.0, high=86400, hint="the default is 10")
    check_port("--port", port, allow_none=-1)
    check_number("--simulate", simulate, low=0, high=MAX_SIMULATED_GPUS)
    check_number("--linger-s", linger_s, low=0, high=3600, hint="0 closes at once")
    config = AgentConfig(
        period_s=period_ms / 1000.0,
        flush_s=flush_s,
        port=None if port == -1 else port,
        whole_node=whole_node,
        pushgateway_url=push,
        run=run,
        linger_s=linger_s,
        lock_dir=lock_dir if lock_dir is not None else default_lock_dir(),
    )
    extra = [SimulatedSensor(simulated_gpus(simulate, t0_s=time.monotonic()))] if simulate else []
    # A pipe or a log file gets a wide table; a terminal gets its own width.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    refused = cannot_start(command[0]) if command else None
    if refused is not None:
        Console(stderr=True, highlight=False).print(f"wattlog agent: {refused.message}")
        return refused.exit_code
    runner = Agent(config, extra_sensors=extra, sinks=[JsonlSink(jsonl)] if jsonl is not None else [])
    # SIGTERM and SIGINT go to the command; this process still flushes and reports.
    with Supervisor() as supervisor:
        try:
            runner.start()
            console.print(f"wattlog agent: metrics at {runner.metrics_url or '(not served)'}")
            for note in runner.notes:
                console.print(f"  note: {note}")
            outcome = run_or_wait(supervisor, command, seconds, console, "wattlog agent")
        finally:
            runner.close()
    return print_ending(runner, console, "wattlog agent", outcome.exit_code)


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


def register(app: typer.Typer) -> None:
    """Add `wattlog agent` to `app` (arguments after `--` are the command to run)."""
    app.command(context_settings={"allow_interspersed_args": False})(agent)
