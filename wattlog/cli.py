"""The `wattlog` command: the root typer app that mounts every package's commands.

This is the composition root, the only module that imports every package: each
package's command modules expose `register(app)`, and the layers below never import one
another upwards (import-linter checks it). :data:`COMMANDS` names each command's register
function; the root group imports a command's module when that command is asked for.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import logging
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from wattlog import __version__
from wattlog.causes import one_line_per_cause
from wattlog.errors import WattlogError
from wattlog.extras import MissingExtra
from wattlog.lazy import import_deferring
from wattlog.lazy_group import lazy_group, run_imports

if TYPE_CHECKING:
    from wattlog.accounting.fleet.calibration import CalibrationWindow

HELP = "Measure, record and publish the energy, carbon and water of training runs."

_ACCOUNTING = "wattlog.accounting.commands"
COMMANDS = {
    "sensors": "wattlog.telemetry.cli:register",
    "sites": f"{_ACCOUNTING}.cli:register",
    "table": f"{_ACCOUNTING}.table_cli:register",
    "compact": f"{_ACCOUNTING}.table_cli:register",
    "node": f"{_ACCOUNTING}.node_cli:register",
    "agent": f"{_ACCOUNTING}.node_cli:register",
    "replay": f"{_ACCOUNTING}.ledger_cli:register",
    "gaps": f"{_ACCOUNTING}.ledger_cli:register",
    "check": f"{_ACCOUNTING}.ledger_cli:register",
    "partitions": f"{_ACCOUNTING}.partitions_cli:register",
    "windows": f"{_ACCOUNTING}.windows_cli:register",
    "scope2": f"{_ACCOUNTING}.scope2_cli:register",
    "calibrate": "wattlog.cli:register_calibrate",
    "audit": f"{_ACCOUNTING}.audit_cli:register",
    "disclose": f"{_ACCOUNTING}.disclose_cli:register",
    "estimate": f"{_ACCOUNTING}.estimate_cli:register",
    "demo": "wattlog.trainer.commands:register",
    "run": "wattlog.trainer.commands:register",
    "health-check": "wattlog.trainer.commands:register",
    "report": "wattlog.dashboards.cli:register",
    "version": "wattlog.cli:register_version",
    "intensity": f"{_ACCOUNTING}.intensity_cli:register",
    "runs": f"{_ACCOUNTING}.runs_cli:register",
    "slurm": f"{_ACCOUNTING}.slurm_cli:register",
    "card": f"{_ACCOUNTING}.card_cli:register",
    "dashboards": "wattlog.dashboards.cli:register",
    "webhook": "wattlog.dashboards.cli:register",
}
"""Every top-level command, in `wattlog --help`'s order, and the function that registers it.

A command's module is imported when the command is asked for (:mod:`wattlog.lazy_group`):
`wattlog table --help` imports the table's module alone, and `wattlog --help` lists each
command with its own help. The commands' modules import the ledger (SQLAlchemy), the agent
and torch inside the commands, never at their top (tests/test_cli_help.py).
"""


HELP_DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}
"""Classes typer's help formatter imports but `wattlog --help` never uses: imported on first use."""


@functools.cache
def full_app() -> typer.Typer:
    """The root app: every command of :data:`COMMANDS`, each module imported on first use."""
    app = typer.Typer(
        name="wattlog",
        help=HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        **lazy_group(COMMANDS),
    )
    app.callback()(root)
    return app


def register_version(app: typer.Typer) -> None:
    """Add `wattlog version`."""
    app.command()(version)


def register_calibrate(app: typer.Typer) -> None:
    """Add `wattlog calibrate`, which measures its own window with the trainer's health load."""
    from wattlog.accounting.commands.calibrate_cli import register

    register(app, _measure_window)


def _measure_window(window: CalibrationWindow) -> str:
    from wattlog.trainer.calibrate_window import measure_window  # the agent and torch: when run

    return measure_window(window)


def __getattr__(name: str) -> Any:
    if name == "app":  # `from wattlog.cli import app`: the full app, built on first use
        return full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def root() -> None:
    """Measure, record and publish the energy, carbon and water of training runs."""


def version() -> None:
    """Print wattlog's version."""
    print(f"wattlog {__version__}")


def main(argv: list[str] | None = None, *, freeze_imports: bool = False) -> int:
    """Run the CLI and return its exit code; a WattlogError becomes one line on stderr, exit 2.

    Args:
        argv: Arguments without the program name (default: sys.argv[1:]).
        freeze_imports: Import the command's modules with the collector paused, then freeze what
            they made out of it (a new process: `run`; a long-lived caller keeps its collector as it is).

    Returns:
        The process exit code.
    """
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = sys.argv[1:] if argv is None else argv
    helping = not args or "--help" in args
    if helping:
        # typer's help formatter imports rich's Markdown (markdown-it) and Traceback (pygments) at its
        # top: 0.15 s of `wattlog --help`, which renders neither (markup mode "rich", nothing raised).
        import_deferring("typer.rich_utils", HELP_DEFERRED)
    group = typer.main.get_group(full_app())
    with _imports_frozen(freeze_imports):
        if args and args[0] in COMMANDS:
            group.get_command(group.make_context("wattlog", [], resilient_parsing=True), args[0])
            if freeze_imports and not helping:  # what the command imports as it starts, paused too
                for module in run_imports(COMMANDS[args[0]]):
                    importlib.import_module(module)
    try:
        try:
            with one_line_per_cause():  # an outage is one line, however many writes it failed
                result = group.main(args=args, prog_name="wattlog", standalone_mode=False)
        except ModuleNotFoundError as error:  # an optional extra not installed: one line with the pip command
            missing = MissingExtra.of(error, f"wattlog {args[0]}" if args else "wattlog")
            if missing is None:
                raise
            raise missing from error
    except WattlogError as error:
        # One line whatever the terminal width; the message is text, not rich markup ("[sites.NAME]").
        stderr = Console(stderr=True, highlight=False, soft_wrap=True)
        stderr.print(f"[bold red]error:[/] {escape(str(error))}")
        return 2
    except typer.Exit as done:
        return done.exit_code
    except typer.Abort:
        return 130
    except typer.TyperException as usage:  # bad arguments: typer shows the usage line
        usage.show()  # type: ignore[attr-defined]
        return int(getattr(usage, "exit_code", 2))
    return result if isinstance(result, int) else 0


@contextlib.contextmanager
def _imports_frozen(freeze: bool) -> Iterator[None]:
    """With `freeze`: no collections inside (importing SQLAlchemy, SQLModel and the ledger's models
    allocates about a million objects, none of them garbage, and triggered some 240 collections,
    0.05-0.08 s of a `wattlog table`, bench.ledger_table), then the modules' objects frozen out of
    later collections and the collector on again for the command itself."""
    if not freeze:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def run() -> None:
    """Console-script entry point."""
    code = main(freeze_imports=True)
    # The interpreter's teardown walks every tracked object in several collections while it clears
    # the modules: with SQLAlchemy's and pydantic's graphs loaded, 0.28-0.33 s of every command here
    # (bench.ledger_table). One collection now (a cycle's finalizers still run, files still flush),
    # then the survivors frozen out of the collector: the teardown takes 0.02 s.
    gc.collect()
    gc.freeze()
    sys.exit(code)
