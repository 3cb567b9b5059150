"""`wattlog run -- COMMAND`: run any command in a measured run session, then show its footprint.

Torch-free: a run session (ledger, agent) around the telemetry supervisor,
which forwards SIGTERM and SIGINT to the command. A preempted job (SIGTERM)
still flushes its last interval, is recorded as ``preempted`` and exits 143.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from wattlog.accounting.run_report import print_run_report
from wattlog.errors import ConfigError
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.supervise import Ending, Supervisor
from wattlog.trainer.session import RunSession, SessionConfig, status_for_outcome


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
) -> int:
    """Run `command` in a run session; returns its exit code by shell convention.

    Raises:
        ConfigError: No command given, or a bad site.
        LedgerError: The ledger cannot be opened.
    """
    if not command:
        raise ConfigError("give the command to run after --, e.g. wattlog run -- python train.py")
    console = console or Console()
    stderr = Console(stderr=True, highlight=False)
    config = SessionConfig(
        run, site=site, db=db, resume=resume, agent_config=agent_config or AgentConfig(port=port)
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
        if session.ledger is not None:
            print_run_report(session.ledger, run, db, console)
    return outcome.exit_code
