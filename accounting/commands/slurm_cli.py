"""`wattlog slurm`: the prolog/epilog pair a SLURM admin installs.

See :mod:`wattlog.accounting.fleet.slurm_hooks`.

    wattlog slurm --site jupiter scripts /etc/slurm/wattlog --db "$URL"   # writes prolog and epilog
    wattlog slurm --site jupiter prolog    # what the written prolog runs (slurmd's Prolog, as root)
    wattlog slurm --site jupiter epilog    # what the written epilog runs (slurmd's Epilog)

Settings go before the hook's name, so the prolog and epilog share them exactly.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wattlog.accounting.fleet.slurm_lifetime import stoppable_runner
from wattlog.errors import WattlogError
from wattlog.help_layout import PLAIN_HELP
from wattlog.options import DbOption, SimulateOption

if TYPE_CHECKING:
    from wattlog.accounting.fleet.slurm_hooks import SlurmHooks

HELP = "SLURM prolog/epilog: an agent per node of each job; its energy, CO2 and water in its AdminComment."

slurm_app = typer.Typer(
    name="slurm",
    help=HELP,
    no_args_is_help=True,
    **PLAIN_HELP,
)


@slurm_app.callback()
def settings(
    ctx: typer.Context,
    db: DbOption = None,
    site: Annotated[str, typer.Option("--site", help="Site of every job's run (CO2 and water).")] = "",
    run_format: Annotated[
        str, typer.Option("--run-format", help="Run name of a job ({job_id} is replaced).")
    ] = "slurm-{job_id}",
    state_dir: Annotated[
        Path, typer.Option("--state-dir", help="Folder of the agents' pid and log files.")
    ] = Path("/run/wattlog-slurm"),
    comment_every_s: Annotated[
        float, typer.Option("--comment-every-s", help="Seconds between AdminComment updates while it runs.")
    ] = 60.0,
    flush_s: Annotated[float, typer.Option("--flush-s", help="Seconds between ledger flushes.")] = 10.0,
    port: Annotated[int, typer.Option("--port", help="Agent metrics port (-1 serves none).")] = 9464,
    listen: Annotated[str, typer.Option("--listen", help="Address the metrics server binds.")] = "0.0.0.0",  # noqa: S104
    simulate: SimulateOption = 0,
    stop_timeout_s: Annotated[
        float, typer.Option("--stop-timeout-s", help="How long the epilog waits for the agent's last flush.")
    ] = 60.0,
) -> None:
    """The settings the prolog and epilog share (given before the hook's name)."""
    # built when a hook runs: `wattlog slurm prolog --help` runs this too, and SlurmHooks imports the ledger
    ctx.obj = functools.partial(
        _hooks,
        db=db,
        site=site,
        run_format=run_format,
        state_dir=state_dir,
        comment_every_s=comment_every_s,
        flush_s=flush_s,
        port=port,
        listen=listen,
        simulate=simulate,
        stop_timeout_s=stop_timeout_s,
    )


def _hooks(**settings: Any) -> SlurmHooks:
    from wattlog.accounting.fleet.slurm_hooks import SlurmHooks

    return SlurmHooks(**settings)


@slurm_app.command("scripts")
def write_scripts(
    ctx: typer.Context,
    folder: Annotated[Path, typer.Argument(help="Folder for `prolog` and `epilog` (root-only files).")],
    export: Annotated[
        list[str] | None,
        typer.Option("--export", help="Also export this variable of the current environment (repeatable)."),
    ] = None,
) -> None:
    """Write the prolog and epilog (these settings; the --db URL exported, never on a command line)."""
    from wattlog.accounting.fleet.slurm_hooks import scripts

    hooks: SlurmHooks = ctx.obj()
    exports = {"PATH": os.environ.get("PATH", os.defpath)}
    exports.update({name: os.environ[name] for name in export or () if name in os.environ})
    if hooks.db:
        exports["WATTLOG_DB"] = hooks.db
    prolog, epilog = scripts(replace(hooks, db=None), folder, exports)
    print(f"wrote {prolog} and {epilog}; in slurm.conf:")
    print(
        f"  Prolog={prolog}\n  Epilog={epilog}\n  PrologFlags=Alloc   # the prolog runs on every node at once"
    )


@slurm_app.command("prolog")
def prolog(ctx: typer.Context) -> None:
    """Start this node's agent for the job (slurmd's Prolog); return at once, exit 0 whatever happened."""
    from wattlog.accounting.fleet.slurm_hooks import start_agent

    try:
        pid = start_agent(ctx.obj(), _environ())
    except (WattlogError, OSError) as error:  # a failing prolog drains the node: the job runs unmeasured
        print(f"wattlog slurm prolog: no agent started: {error}", file=sys.stderr)
        return
    print(f"wattlog slurm prolog: agent {pid} started")


@slurm_app.command("epilog")
def epilog(ctx: typer.Context) -> None:
    """Stop this node's agent; write the job's AdminComment; append the report card (slurmd's Epilog).

    Exits 0 whatever happened: a failing epilog drains the node. What was not written goes to
    stderr (slurmd's log); the figures stay in the ledger.
    """
    from wattlog.accounting.fleet.slurm_hooks import finish_job

    try:
        said = finish_job(ctx.obj(), _environ())
    except (WattlogError, OSError) as error:
        said = [f"the job's figures not written: {error}"]
    for line in said:
        print(f"wattlog slurm epilog: {line}", file=sys.stderr)


@slurm_app.command("agent", hidden=True)
def agent(ctx: typer.Context) -> None:
    """The prolog's agent: measure the node until SIGTERM (from the epilog)."""
    from wattlog.accounting.fleet.slurm_hooks import serve_agent

    stop = threading.Event()

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    # its SLURM commands are killed when SIGTERM comes: the agent ends within a second of it
    raise typer.Exit(serve_agent(ctx.obj(), _environ(), stop, stoppable_runner(stop)))


def _environ() -> dict[str, str]:
    return dict(os.environ)


def register(app: typer.Typer) -> None:
    """Add `wattlog slurm` to the root app."""
    app.add_typer(slurm_app)
