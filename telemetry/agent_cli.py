"""What `wattlog agent` and `wattlog node` share: run or wait under the supervisor; the sampler's health.

The commands themselves live in :mod:`wattlog.accounting.commands.node_cli`, above the
ledger, so both record through the one composition root
(:mod:`wattlog.accounting.fleet.recording`). After a run they print one row per device
(:mod:`wattlog.accounting.fleet.agent_report`) and the sampler's health line from here.
"""

from __future__ import annotations

from rich.console import Console

from wattlog.telemetry.sampler import SamplerStats
from wattlog.telemetry.supervise import Ending, Outcome, Supervisor


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
