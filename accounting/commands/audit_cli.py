"""`wattlog audit RUN -o run.tar.xz` builds a run's audit bundle; `wattlog audit verify FILE` checks one;
`wattlog audit series FILE -o series.csv` writes its power and counter series."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from wattlog.accounting.carbon.sites import run_catalog
from wattlog.accounting.progress import Progress, progress_lines
from wattlog.errors import ConfigError
from wattlog.options import DbOption


def audit(
    target: Annotated[
        str,
        typer.Argument(help="A run's name; `verify` to check BUNDLE; `series` to write its series as CSV."),
    ],
    bundle: Annotated[Path | None, typer.Argument(help="With `verify` or `series`: the bundle.")] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Where to write the bundle (or the CSV: stdout).")
    ] = None,
    site: Annotated[str | None, typer.Option("--site", help="Site for the row (default: the run's).")] = None,
    device: Annotated[
        list[str] | None, typer.Option("--device", help="With `series`: only this device's (repeatable).")
    ] = None,
    db: DbOption = None,
) -> None:
    """Build a run's audit bundle (rows, gaps, events, printed row, SHA-256 manifest), or verify one.

    `verify` recomputes the run's Table-19 row from the bundle alone and exits 1 unless every hash
    matches and every cell is recomputed to the printed digit. `series` writes each row's device,
    source, times, joules, mean power and running counter, the joules with their bands, as CSV, once
    every hash matches (else exits 1).
    """
    from wattlog.accounting.ledger.engine import make_engine
    from wattlog.accounting.ledger.store import Ledger
    from wattlog.accounting.publishing.audit.bundle import build_bundle, verify_bundle
    from wattlog.accounting.publishing.run_table import TableOptions

    if target in ("verify", "series") and bundle is None:
        raise ConfigError(f"wattlog audit {target} BUNDLE: name the bundle")
    if target == "series" and bundle is not None:
        _write_series(bundle, output, device or [])
    if target == "verify" and bundle is not None:
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
        options = TableOptions(catalog=run_catalog(), site=site)  # $WATTLOG_SITES_FILE sites too
        build_bundle(Ledger(engine), target, options, output, _progress())
    finally:
        engine.dispose()
    typer.echo(f"audit bundle of run {target!r}: {output} ({output.stat().st_size} bytes)")


def _write_series(bundle: Path, output: Path | None, devices: list[str]) -> None:
    """`wattlog audit series`: the CSV to `output` (stdout without), or the manifest's problems, exit 1.

    A file is written beside `output` and renamed onto it once whole: a refused bundle or a failure
    half-way leaves `output` as it was."""
    from wattlog.accounting.publishing.audit.bundle import write_series

    if output is None:
        problems = write_series(bundle, sys.stdout, devices, _progress())
    else:
        part = output.with_name(f"{output.name}.part")
        try:
            with part.open("w", newline="") as out:
                problems = write_series(bundle, out, devices, _progress())
            if not problems:
                part.replace(output)
        finally:
            part.unlink(missing_ok=True)
    for problem in problems:
        typer.echo(f"FAILED {problem}", err=True)
    if problems:
        typer.echo(f"{bundle}: REFUSED (no series written)", err=True)
        raise typer.Exit(1)
    if output is not None:
        typer.echo(f"series of {bundle}: {output}", err=True)
    raise typer.Exit(0)


def _progress() -> Progress:
    """Lines on stderr as a long bundle or verify goes (the compressing step counted in MB)."""
    return progress_lines("audit", in_bytes=("compressing",))


def register(app: typer.Typer) -> None:
    """Add `wattlog audit` to the root app."""
    app.command("audit")(audit)
