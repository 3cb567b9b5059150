"""`wattlog run -- COMMAND`: run any command in a measured run session, then show its footprint.

Torch-free: a run session (ledger, agent) around the telemetry supervisor,
which forwards SIGTERM and SIGINT to the command. A preempted job (SIGTERM)
still flushes its last interval, is recorded as ``preempted`` and exits 143.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from wattlog.accounting.run_report import print_run_report
from wattlog.errors import ConfigError, WattlogError
from wattlog.telemetry.agent import AgentConfig, default_lock_dir
from wattlog.telemetry.sinks import INCOMPLETE_EXIT
from wattlog.telemetry.supervise import Ending, Supervisor
from wattlog.trainer.session import RunSession, SessionConfig, status_for_outcome

INCOMPLETE = INCOMPLETE_EXIT
"""Exit code of a run whose command succeeded but whose energy rows are not all in the ledger."""


def run_command(
    command: Sequence[str],
    *,
    run: str,
    site: str = "world",
    db: str | None = None,
    port: int = 0,
    resume: bool = False,
    agent_config: AgentConfig | None = None,
    console: Console | None = None,
    sample_nodes: int | None = None,
    flush_s: float = 10.0,
    lock_dir: Path | None = None,
    labels: Mapping[str, Any] | None = None,
) -> int:
    """Run `command` in a run session; returns its exit code by shell convention.

    `labels` are more SessionConfig fields: project, role, phase, stage, scale_group,
    device_model, gpu_hours, requests. `agent_config`, if given, replaces `port`,
    `flush_s` and `lock_dir`. A command that succeeded but whose energy rows are not
    all in the ledger exits INCOMPLETE (75).

    Raises:
        ConfigError: No command given, or a bad site.
        LedgerError: The ledger cannot be opened or the run cannot be registered.
    """
    if not command:
        raise ConfigError("give the command to run after --, e.g. wattlog run -- python train.py")
    console = console or Console()
    stderr = Console(stderr=True, highlight=False)
    if agent_config is None:
        agent_config = AgentConfig(
            port=port, flush_s=flush_s, lock_dir=lock_dir if lock_dir is not None else default_lock_dir()
        )
    # Ranks and the job's identity (SLURM / torchrun) from the environment: a node sampled out by
    # --sample-nodes still joins the job's run and reports, it only starts no agent.
    config = SessionConfig.from_env(
        run,
        site=site,
        db=db,
        resume=resume,
        agent_config=agent_config,
        sample_nodes=sample_nodes,
        **dict(labels or {}),
    )
    session = RunSession(config)
    # Signals are taken over before the session starts: a SIGTERM during start-up still closes the run.
    with Supervisor() as supervisor:
        session.start()
        console.print(f"Run {run}: measuring the node; metrics on {session.metrics_url}")
        outcome = supervisor.run(command)
        if outcome.ending is Ending.NOT_STARTED:
            stderr.print(f"[bold red]error:[/] {outcome.message}")
        elif outcome.ending is Ending.STOPPED:
            stderr.print(f"wattlog run: {outcome.message}: stopping the run and flushing its energy")
        summary = session.close(status_for_outcome(outcome), stopped=outcome)
        console.print(f"Run {run} {summary.status} (exit code {outcome.exit_code}); {summary.line()}.")
        return _show_end(session, outcome.exit_code, console, stderr)


def _show_end(session: RunSession, exit_code: int, console: Console, stderr: Console) -> int:
    """Print the closed run's figures and whether rows are missing; the exit code by that."""
    run, db = session.run, session.config.db
    if session.ledger is not None:
        try:
            print_run_report(session.ledger, run, db, console)
        except WattlogError as failed:  # the ledger may be down: the line below still says so
            stderr.print(f"cannot show the figures of {run}: {failed}", soft_wrap=True, markup=False)
    if report_incomplete(session.unwritten_rows, run, console):
        return exit_code or INCOMPLETE
    return exit_code


def report_incomplete(missing: int, run: str, console: Console) -> bool:
    """Say, under the figures and in one line on stderr, that `missing` rows of the run are not in the ledger.

    Returns:
        Whether the run is incomplete (the command must then exit non-zero).
    """
    if not missing:
        return False
    console.print(f"[bold red]INCOMPLETE:[/] the figures of {run} above lack {missing} energy rows.")
    Console(stderr=True).print(
        f"wattlog: run {run} is incomplete: {missing} energy rows are not in the ledger; they are spooled "
        "(`wattlog replay` stores them once the ledger is reachable) or lost (counted in the spool's gaps)",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
    return True
