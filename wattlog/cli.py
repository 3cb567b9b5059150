"""The `wattlog` command: the root typer app that mounts every package's commands.

This is the composition root, the only module that imports every package: each
package exposes `register(app)`, and the layers below never import one another
upwards (import-linter checks it).
"""

from __future__ import annotations

import logging
import sys

import typer
from rich.console import Console
from rich.markup import escape

from wattlog import __version__
from wattlog.accounting.cli import register as register_accounting
from wattlog.dashboards.cli import register as register_dashboards
from wattlog.errors import WattlogError
from wattlog.extras import MissingExtra
from wattlog.telemetry.cli import register as register_telemetry
from wattlog.trainer.commands import register as register_trainer

app = typer.Typer(
    name="wattlog",
    help="Measure, record and publish the energy, carbon and water of training runs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
register_telemetry(app)
register_accounting(app)
register_trainer(app)


register_dashboards(app)


@app.callback()
def root() -> None:
    """Measure, record and publish the energy, carbon and water of training runs."""


@app.command()
def version() -> None:
    """Print wattlog's version."""
    print(f"wattlog {__version__}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; a WattlogError becomes one line on stderr, exit 2.

    Args:
        argv: Arguments without the program name (default: sys.argv[1:]).

    Returns:
        The process exit code.
    """
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = sys.argv[1:] if argv is None else argv
    try:
        try:
            result = app(args=args, prog_name="wattlog", standalone_mode=False)
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


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
