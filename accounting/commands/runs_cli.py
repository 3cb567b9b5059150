"""`wattlog runs`: list the ledger's runs, relabel, rename or delete one.

A sub-app: `wattlog runs` (or `wattlog runs list`) lists; `relabel`, `rename`
and `delete` change one run. A new subcommand is one more function added with
``runs_app.command(NAME)``, opening the ledger with :func:`open_ledger`.

A run is `development` unless marked `final`; `wattlog table` shows the final
runs, so marking the run that counts is `wattlog runs relabel NAME --role final`.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from wattlog.accounting.commands.reap_cli import register as register_reap
from wattlog.accounting.commands.resite_cli import register as register_resite
from wattlog.accounting.publishing.render import TableFormat, render_grid, show
from wattlog.accounting.units import readable
from wattlog.errors import ConfigError
from wattlog.help_layout import PLAIN_HELP
from wattlog.options import DbOption, FormatOption

if TYPE_CHECKING:
    from wattlog.accounting.ledger.store import Ledger
    from wattlog.accounting.ledger.views import RunInfo

runs_app = typer.Typer(
    name="runs",
    help="List the ledger's runs; relabel (--role final: a Table 19 row), rename or delete one.",
    invoke_without_command=True,
    **PLAIN_HELP,
)

_RunArgument = Annotated[str, typer.Argument(help="Run name or id.")]
_ProjectOption = Annotated[str | None, typer.Option("--project", help="Only this project's runs.")]
_RoleFilter = Annotated[str | None, typer.Option("--role", help="Only runs of this role.")]
HEADERS = ["Run", "Status", "Role", "Stage", "Energy", "Site", "Start (UTC)"]


@contextmanager
def open_ledger(db: str | None) -> Iterator[Ledger]:
    """The ledger at `db` (never created: a typo writes nothing), disposed after the block."""
    from wattlog.accounting.ledger.engine import make_engine
    from wattlog.accounting.ledger.store import Ledger

    engine = make_engine(db, create=False)
    try:
        yield Ledger(engine)
    finally:
        engine.dispose()


@runs_app.callback()
def runs(
    ctx: typer.Context,
    db: DbOption = None,
    project: _ProjectOption = None,
    role: _RoleFilter = None,
    fmt: FormatOption = TableFormat.RICH,
) -> None:
    """List the ledger's runs (without a subcommand): status, role, stage, energy, site, start."""
    if ctx.invoked_subcommand is None:
        list_runs(db, project, role, fmt)
    elif db is not None or project is not None or role is not None or fmt is not TableFormat.RICH:
        # Options given here would not reach the subcommand: `--db X relabel` would change the default ledger.
        raise ConfigError(
            f"put the options after the subcommand: wattlog runs {ctx.invoked_subcommand} ... --db URL"
        )


@runs_app.command("list")
def list_runs(
    db: DbOption = None,
    project: _ProjectOption = None,
    role: _RoleFilter = None,
    fmt: FormatOption = TableFormat.RICH,
) -> None:
    """List the ledger's runs, oldest first: status, role, stage, energy, site, start."""
    from wattlog.accounting.ledger.engine import describe_url

    with open_ledger(db) as ledger:
        chosen = [r for r in ledger.runs(project) if role is None or r.role == role]
        cells = [run_cells(ledger, run) for run in chosen]
    notes = [
        "Energy: IT energy recorded (the devices measured); `wattlog table NAME` gives its footprint.",
        "Table 19 (`wattlog table`) shows final runs: wattlog runs relabel NAME --role final.",
        f"Ledger: {describe_url(db)}.",
    ]
    if not chosen:
        notes.insert(0, "no runs" + (" match" if project or role else " recorded yet"))
    show(render_grid(HEADERS, cells, notes, fmt, right={4}))


def run_cells(ledger: Ledger, run: RunInfo) -> list[str]:
    """One run's line; a figure nobody recorded is "-"."""
    from wattlog.accounting.ledger.run_energy import ledger_energy

    energy = ledger_energy(ledger, run.id, by_hour=False)
    return [
        run.name,
        str(run.status),
        str(run.role),
        str(run.stage) or "-",
        "-" if energy is None else readable(energy.it_j, "energy"),
        run.site or "-",
        dt.datetime.fromtimestamp(run.start_s, dt.UTC).strftime("%Y-%m-%d %H:%M:%S"),
    ]


@runs_app.command("relabel")
def relabel(
    run: _RunArgument,
    role: Annotated[
        str,
        typer.Option(
            "--role", help="development, final (a Table 19 row), ablation, baseline, failed or debug."
        ),
    ],
    db: DbOption = None,
) -> None:
    """Set a run's role: `--role final` makes it a Table 19 row; any other role is development."""
    from wattlog.accounting.ledger.admin import relabel_run
    from wattlog.accounting.ledger.engine import describe_url

    with open_ledger(db) as ledger:
        before = ledger.get_run(run)
        after = relabel_run(ledger, run, role)
    print(f"run {after.name}: role {before.role} -> {after.role} (ledger {describe_url(db)})")


@runs_app.command("rename")
def rename(
    run: _RunArgument,
    new_name: Annotated[str, typer.Argument(help="The new name.")],
    db: DbOption = None,
) -> None:
    """Give a run another name; its rows, events and id stay."""
    from wattlog.accounting.ledger.admin import rename_run
    from wattlog.accounting.ledger.engine import describe_url

    with open_ledger(db) as ledger:
        before = ledger.get_run(run)
        after = rename_run(ledger, run, new_name)
    print(f"run {before.name} renamed {after.name} (ledger {describe_url(db)})")


@runs_app.command("delete")
def delete(
    run: _RunArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    db: DbOption = None,
    force: Annotated[
        bool, typer.Option("--force", help="Delete a run still being written (its later rows are refused).")
    ] = False,
) -> int:
    """Delete a run with all its rows (energy, gaps, events, windows), after a confirmation.

    A run whose agent still writes (its lease is held) is refused in one line unless --force.
    """
    from wattlog.accounting.ledger.admin import delete_run
    from wattlog.accounting.ledger.engine import describe_url

    with open_ledger(db) as ledger:
        found = ledger.get_run(run)
        if not yes:
            still = " (it is still marked running)" if found.status == "running" else ""
            question = f"Delete run {found.name}{still} and all its rows from {describe_url(db)}?"
            if not _confirmed(question, found.name):
                print(f"run {found.name} kept")
                return 1
        done = delete_run(ledger, found.id, force=force)
    print(f"{done.line()} (ledger {describe_url(db)})")
    return 0


def _confirmed(question: str, run: str) -> bool:
    """The answer to `question`; no answer to read (stdin not a terminal, at its end) is a usage error."""
    try:
        return typer.confirm(question, default=False)
    except typer.Abort:
        if sys.stdin is not None and sys.stdin.isatty():
            raise  # Ctrl-C or Ctrl-D at the prompt: the person stopped it
        raise ConfigError(
            f"run {run} kept: deleting it needs a confirmation and stdin gave none (not a terminal); "
            "add --yes to delete without asking"
        ) from None


def register(app: typer.Typer) -> None:
    """Add `wattlog runs` (list, relabel, rename, delete, reap, resite) to the root app."""
    register_reap(runs_app)
    register_resite(runs_app)
    app.add_typer(runs_app)
