"""The `wattlog` command: the root typer app that mounts every package's commands.

This is the composition root, the only module that imports every package: each
package exposes `register(app)`, and the layers below never import one another
upwards (import-linter checks it).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import sys
from collections.abc import Iterator
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from wattlog import __version__
from wattlog.causes import one_line_per_cause
from wattlog.errors import WattlogError
from wattlog.extras import MissingExtra
from wattlog.help_layout import PLAIN_HELP
from wattlog.lazy import import_deferring

HELP = "Measure, record and publish the energy, carbon and water of training runs."

COMMANDS = (
    (
        "sensors",
        "List the devices wattlog would measure: kind, energy counter, and the source label of each figure.",
    ),
    ("sites", "List the site catalog: PUE, WUE and carbon intensity, each with its source."),
    ("table", "Print a Table-19-style footprint of runs: energy, PUE, carbon intensity, tCO2eq, WUE, water."),
    (
        "compact",
        "Fold the ledger's old flush rows into hourly buckets (totals and hour-by-hour energy kept exactly).",
    ),
    ("node", "Measure this node of a multi-node job into the shared ledger (one per node)."),
    ("agent", "Run the measuring agent (sidecar mode): sample, serve metrics, print what was measured."),
    ("replay", "Store the energy rows and events spooled while the ledger was unavailable; each lands once."),
    ("gaps", "List a run's gaps: when, which device, how long and why (nothing inside them is filled in)."),
    (
        "check",
        "Check the whole ledger: the file (SQLite), every run's rows, and the totals and hours a table\n"
        "reads against the rows they sum; exit 2 if damaged (with --repair: recompute those, then 0).",
    ),
    (
        "partitions",
        "Move rows the DEFAULT partition holds into their day partitions and create days ahead (PostgreSQL).",
    ),
    (
        "windows",
        "List a run's measurement windows: energy of each (all its devices summed), band and sources.",
    ),
    ("scope2", "Location-based and market-based CO2 of runs (GHG Protocol Scope 2 dual reporting)."),
    (
        "calibrate",
        "Store a site's overhead multiplier (node / GPU energy, with its band), measured here or by RUN.",
    ),
    (
        "audit",
        "Build a run's audit bundle (rows, gaps, events, printed row, SHA-256 manifest), or verify one.",
    ),
    (
        "disclose",
        "Write what was measured and how for a run or a project's phases, in a published form.",
    ),
    (
        "estimate",
        "Estimate energy and CO2 from GPU-hours, or before a run from tokens x 6 x params / (MFU x peak).",
    ),
    (
        "demo",
        "Train a small GPT for a minute under the tracker, print its footprint (--table: beside Table 19).",
    ),
    ("run", "Run COMMAND with an agent sampling the node and record the run; exit with its code."),
    (
        "health-check",
        "Multiply, compare and time on each device, check NVML; exit 1 if any device is unhealthy.",
    ),
    ("report", "Serve the carbon report (Streamlit) on the ledger: http://HOST:PORT."),
    ("version", "Print wattlog's version."),
    (
        "intensity",
        "Live grid carbon intensity, cached in the ledger (providers: `intensity fetch --help`).",
    ),
    ("runs", "List the ledger's runs; relabel (--role final: a Table 19 row), rename or delete one."),
    (
        "slurm",
        "SLURM prolog/epilog: an agent per node of each job; its energy, CO2 and water in its AdminComment.",
    ),
    ("card", "Published cards: reproduce the suite of published rows; check a card's energy table."),
    ("dashboards", "Grafana dashboards: build the JSON, provision Grafana."),
    ("webhook", "Receive alerts into the ledger; send wattlog's events out."),
)
"""Every top-level command and its one-line help, in the real app's order, for `wattlog --help`.

The packages' commands import SQLAlchemy, the ledger models and the agent (about a second);
`wattlog --help` renders this list with the same typer layout instead, and a test checks
that it equals the real app's help.
"""


HELP_DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}
"""Classes typer's help formatter imports but `wattlog --help` never uses: imported on first use."""


def _new_app() -> typer.Typer:
    return typer.Typer(
        name="wattlog",
        help=HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        **PLAIN_HELP,
    )


@functools.cache
def full_app() -> typer.Typer:
    """The root app with every package's commands mounted (imports every package)."""
    from wattlog.accounting.commands.cli import register as register_accounting
    from wattlog.dashboards.cli import register as register_dashboards
    from wattlog.telemetry.cli import register as register_telemetry
    from wattlog.trainer.calibrate_window import measure_window
    from wattlog.trainer.commands import register as register_trainer

    app = _new_app()
    register_telemetry(app)
    register_accounting(app, measure_window)
    register_trainer(app)
    register_dashboards(app)
    app.command()(version)
    app.callback()(root)
    return app


def command_app(command: str) -> typer.Typer | None:
    """An app with only `command`'s module mounted, for the commands read often on a big ledger.

    `wattlog table` is run again and again on a month of a fleet's rows; mounting every
    package's commands first cost it most of a second of imports (issue 27). None: build the
    full app. A test checks that this app's `table --help` equals the full app's.
    """
    if command not in ("table", "compact"):
        return None
    from wattlog.accounting.commands.table_cli import register as register_table

    app = _new_app()
    register_table(app)
    app.callback()(root)
    return app


def help_app() -> typer.Typer:
    """An app with the same help as :func:`full_app`, built without importing any package."""
    app = _new_app()
    for name, text in COMMANDS:
        app.command(name, help=text)(_placeholder)
    app.callback()(root)
    return app


def _placeholder() -> None:
    """Never run: `wattlog --help` only lists it."""


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
    light = args in ([], ["--help"])
    if light:
        # typer's help formatter imports rich's Markdown (markdown-it) and Traceback (pygments) at its
        # top: 0.15 s of `wattlog --help`, which renders neither (markup mode "rich", nothing raised).
        import_deferring("typer.rich_utils", HELP_DEFERRED)
    with _imports_frozen(freeze_imports):
        app = help_app() if light else (command_app(args[0]) or full_app())
    try:
        try:
            with one_line_per_cause():  # an outage is one line, however many writes it failed
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
