"""`wattlog run -- COMMAND`: run any command in a measured run session, then show its footprint.

Torch-free: a run session (ledger, agent) around the telemetry supervisor,
which forwards SIGTERM and SIGINT to the command. A preempted job (SIGTERM)
still flushes its last interval, is recorded as ``preempted`` and exits 143.
What the command did (its CPU time, how often it was runnable, the GPUs' mean
utilisation meanwhile: wattlog.trainer.activity) is recorded as an ``activity``
event, so its energy is split into busy and idle (``wattlog run --table``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rich.console import Console

from wattlog.accounting.ledger.completeness import Completeness
from wattlog.accounting.publishing.run_report import print_run_end
from wattlog.errors import ConfigError, LedgerUnavailable, RunNotFound, WattlogError
from wattlog.events import Activity
from wattlog.records import Kind
from wattlog.telemetry.sinks import INCOMPLETE_EXIT
from wattlog.telemetry.supervise import Ending, StopRequested, Supervisor
from wattlog.telemetry.types import mean_utilisation
from wattlog.trainer.activity import RunnableSampler, children_cpu_s, record_activity
from wattlog.trainer.session import RunSession, SessionConfig, cause_of, status_for_outcome

log = logging.getLogger(__name__)

NO_COMMAND = "give the command to run after --, e.g. wattlog run -- python train.py"
INCOMPLETE = INCOMPLETE_EXIT
"""Exit code of a run whose command succeeded but whose energy rows are not all in the ledger."""


def run_command(
    command: Sequence[str], config: SessionConfig, *, console: Console | None = None, table: bool = False
) -> int:
    """Run `command` in a run session; returns its exit code by shell convention.

    A command that succeeded but whose energy rows are not all in the ledger exits INCOMPLETE (75).
    The run ends with five lines (its status, energy, CO2 and water, the ledger, the command that
    prints the full table); a command that could not start has its error printed last.

    Args:
        command: The command and its arguments.
        config: The run to record (:meth:`SessionConfig.from_env` reads the ranks and the job's
            identity, so a node sampled out by ``sample_nodes`` still joins the run and reports).
        console: Where the figures go (default: stdout).
        table: Print the run beside Table 19 and its energy split instead of the five lines.

    Raises:
        ConfigError: No command given, or a bad site.
        LedgerError: The ledger cannot be opened or the run cannot be registered.
    """
    if not command:
        raise ConfigError(NO_COMMAND)
    console = console or Console()
    stderr = Console(stderr=True, highlight=False)
    session = RunSession(config)
    # Signals are taken over before the session starts: a SIGTERM during start-up still closes the run.
    sampler = RunnableSampler()
    with Supervisor(popen=sampler.popen) as supervisor:
        try:
            session.start(while_connecting=supervisor.raising())
        except StopRequested as stop:
            stderr.print(f"wattlog run: {stop} while starting; {command[0]} was not run")
            return stop.exit_code
        run = session.run  # a re-run under a taken name is a new attempt: my-run-2
        console.print(f"Run {run}: measuring the node; metrics on {session.metrics_url}", soft_wrap=True)
        start_s, cpu_s, devices = session.clock.wall(), children_cpu_s(), session.snapshot()
        outcome = supervisor.run(command)
        runnable = sampler.stop()
        if outcome.ending is not Ending.NOT_STARTED:
            gpu_busy = mean_utilisation(devices, session.snapshot(), Kind.GPU)
            end_s, used_s = session.clock.wall(), children_cpu_s() - cpu_s
            record_activity(session, Activity(start_s, end_s, used_s, gpu_busy, runnable))
        if outcome.ending is Ending.STOPPED:
            stderr.print(f"wattlog run: {outcome.message}: stopping the run and flushing its energy")
        summary = session.close(status_for_outcome(outcome), stopped=outcome)
        ending = f"Run {run} {summary.status} (exit code {outcome.exit_code}); {summary.recorded_part()}."
        console.print(ending, soft_wrap=True)
        code = _show_end(session, outcome.exit_code, console, stderr, table)
        if outcome.ending is Ending.NOT_STARTED:  # last, so the command's own error is what the user sees
            stderr.print(f"[bold red]error:[/] {outcome.message}")
        return code


def _show_end(session: RunSession, exit_code: int, console: Console, stderr: Console, table: bool) -> int:
    """Print the closed run's figures (the table if asked) and whether it is incomplete; the exit code."""
    run, db = session.run, session.config.db
    shown = False
    if session.ledger is not None:
        try:
            print_run_end(session.ledger, run, db, table=table, console=console)
            shown = True
        except (LedgerUnavailable, RunNotFound) as down:  # the outage's one line is said already, or is this
            log.error("cannot show the figures of %s: %s", run, down, extra=cause_of(down))
        except WattlogError as failed:
            stderr.print(f"cannot show the figures of {run}: {failed}", soft_wrap=True, markup=False)
    done = session.completeness()
    report_incomplete(done, run, console, shown=shown)
    return done.exit_code(exit_code)


def report_incomplete(done: Completeness, run: str, console: Console, *, shown: bool = True) -> bool:
    """Say, in one line on stderr, what of the run is not in the ledger (and mark figures shown above).

    Args:
        done: What of the run is not in the ledger (RunSession.completeness).
        run: The run's name.
        console: Where the figures went.
        shown: Whether figures were printed above (only then are they marked not final).

    Returns:
        Whether the run is incomplete (the command must then exit non-zero: done.exit_code).
    """
    if done.complete:
        return False
    if shown:
        console.print(f"[bold red]INCOMPLETE:[/] the figures of {run} above are not final.", soft_wrap=True)
    Console(stderr=True).print(done.line("wattlog", run), highlight=False, soft_wrap=True, markup=False)
    return True
