"""`wattlog run -- COMMAND`: run any command with an agent sampling the node, then show its footprint."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from wattlog.accounting.run_report import print_run_report
from wattlog.errors import ConfigError, WattlogError
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sinks import INCOMPLETE_EXIT
from wattlog.trainer.tracker import Tracker

COMMAND_NOT_FOUND = 127
"""Exit code of a command that does not exist, as the shell gives it."""
INCOMPLETE = INCOMPLETE_EXIT
"""Exit code of a run whose command succeeded but whose energy rows are not all in the ledger."""


class CommandFailed(WattlogError):
    """The command exited non-zero (the run is recorded as failed)."""


def run_command(
    command: Sequence[str],
    *,
    run: str,
    site: str = "world",
    db: str | None = None,
    port: int = 0,
    resume: bool = False,
    console: Console | None = None,
    flush_s: float = 10.0,
    lock_dir: Path | None = None,
) -> int:
    """Run `command` under a Tracker; returns its exit code (127 if it does not exist).

    Raises:
        ConfigError: No command given, or a bad site.
        LedgerError: The ledger cannot be opened.
    """
    if not command:
        raise ConfigError("give the command to run after --, e.g. wattlog run -- python train.py")
    console = console or Console()
    agent_config = AgentConfig(port=port, flush_s=flush_s)
    if lock_dir is not None:
        agent_config = dataclasses.replace(agent_config, lock_dir=lock_dir)
    tracker = Tracker(run, site=site, db=db, resume=resume, gc_every=None, agent_config=agent_config)
    tracker.start()
    console.print(f"Run {run}: measuring the node; metrics on {tracker.metrics_url}")
    error: BaseException | None = None
    try:
        code = subprocess.call(list(command))
    except FileNotFoundError:
        code = COMMAND_NOT_FOUND
        _stderr().print(f"[bold red]error:[/] command not found: {command[0]}", highlight=False)
    except PermissionError:
        code = 126
        _stderr().print(f"[bold red]error:[/] command not executable: {command[0]}", highlight=False)
    except KeyboardInterrupt as interrupted:
        code, error = 130, interrupted
    if code != 0 and error is None:
        error = CommandFailed(f"{command[0]} exited with code {code}")
    tracker.close(error)
    missing = tracker.unwritten_rows
    console.print(f"Run {run} {tracker.status}{', INCOMPLETE' if missing else ''} (exit code {code}).")
    if tracker.ledger is not None:
        try:
            print_run_report(tracker.ledger, run, db, console)
        except WattlogError as failed:
            _stderr().print(f"cannot show the figures of {run}: {failed}", highlight=False, soft_wrap=True)
    if report_incomplete(tracker, run, console):
        return code or INCOMPLETE
    return code


def report_incomplete(tracker: Tracker, run: str, console: Console) -> bool:
    """Say, under the figures and in one line on stderr, that the run's rows are not all in the ledger.

    Returns:
        Whether the run is incomplete (the command must then exit non-zero).
    """
    missing = tracker.unwritten_rows
    if not missing:
        return False
    console.print(f"[bold red]INCOMPLETE:[/] the figures of {run} above lack {missing} energy rows.")
    _stderr().print(
        f"wattlog: run {run} is incomplete: {missing} energy rows are not in the ledger; they are spooled "
        "(`wattlog replay` stores them once the ledger is reachable) or lost (counted in the spool's gaps)",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
    return True


def _stderr() -> Console:
    return Console(stderr=True)
