"""`wattlog run -- COMMAND`: run any command with an agent sampling the node, then show its footprint."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from wattlog.accounting.run_report import print_run_report
from wattlog.errors import ConfigError, WattlogError
from wattlog.telemetry.agent import AgentConfig
from wattlog.trainer.tracker import Tracker

COMMAND_NOT_FOUND = 127
"""Exit code of a command that does not exist, as the shell gives it."""


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
    labels: Mapping[str, Any] | None = None,
) -> int:
    """Run `command` under a Tracker; returns its exit code (127 if it does not exist).

    `labels` are more Tracker keywords: project, role, phase, stage, scale_group,
    device_model, gpu_hours, requests.

    Raises:
        ConfigError: No command given, or a bad site.
        LedgerError: The ledger cannot be opened.
    """
    if not command:
        raise ConfigError("give the command to run after --, e.g. wattlog run -- python train.py")
    console = console or Console()
    tracker = Tracker(
        run,
        site=site,
        db=db,
        resume=resume,
        gc_every=None,
        agent_config=AgentConfig(port=port),
        **dict(labels or {}),
    )
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
    console.print(f"Run {run} {tracker.status} (exit code {code}).")
    if tracker.ledger is not None:
        print_run_report(tracker.ledger, run, db, console)
    return code


def _stderr() -> Console:
    return Console(stderr=True)
