"""`wattlog audit RUN -o run.tar.xz` builds a run's audit bundle; `wattlog audit verify FILE` checks one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wattlog.accounting.audit import build_bundle, verify_bundle
from wattlog.accounting.ledger.engine import make_engine
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.progress import Progress, progress_lines
from wattlog.accounting.run_table import TableOptions
from wattlog.accounting.sites import site_catalog
from wattlog.errors import ConfigError
from wattlog.options import DbOption


def audit(
    target: Annotated[str, typer.Argument(help="A run's name, or `verify` to check the bundle BUNDLE.")],
    bundle: Annotated[Path | None, typer.Argument(help="With `verify`: the bundle to check.")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Where to write the bundle.")] = None,
    site: Annotated[str | None, typer.Option("--site", help="Site for the row (default: the run's).")] = None,
    db: DbOption = None,
) -> None:
    """Build a run's audit bundle (rows, gaps, events, printed row, SHA-256 manifest), or verify one.

    `verify` recomputes the run's Table-19 row from the bundle alone and exits 1 unless every hash
    matches and every cell is recomputed to the printed digit.
    """
    if target == "verify":
        if bundle is None:
            raise ConfigError("wattlog audit verify BUNDLE: name the bundle to check")
        result = verify_bundle(bundle, _progress())
        for column, text in result.recomputed.items():
            if column != "notes":
                typer.echo(f"{column}: {text} (printed {result.printed.get(column)})")
        for problem in result.problems:
            typer.echo(f"FAILED {problem}", err=True)
        typer.echo(f"{bundle}: {'verified' if result.ok else 'REFUSED'}")
        raise typer.Exit(0 if result.ok else 1)
    if output is None:
        raise ConfigError("wattlog audit RUN -o run.tar.xz: say where to write the bundle")
    engine = make_engine(db, create=False)
    try:
        options = TableOptions(catalog=site_catalog(), site=site)
        build_bundle(Ledger(engine), target, options, output, _progress())
    finally:
        engine.dispose()
    typer.echo(f"audit bundle of run {target!r}: {output} ({output.stat().st_size} bytes)")


def _progress() -> Progress:
    """Lines on stderr as a long bundle or verify goes (the compressing step counted in MB)."""
    return progress_lines("audit", in_bytes=("compressing",))


def register(app: typer.Typer) -> None:
    """Add `wattlog audit` to the root app."""
    app.command("audit")(audit)
