"""The ledger's commands: `wattlog table` (Table 19 of the OLMo 2 paper for recorded runs, projects
and published models) and `wattlog compact` (fold old rows into hourly buckets)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wattlog.accounting.footprint import WaterConvention
from wattlog.accounting.intensity import HourlySeries
from wattlog.accounting.ledger.engine import describe_url, make_engine
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.reference import reference_table_rows
from wattlog.accounting.render import TableFormat, TableRow, footnotes, render, show
from wattlog.accounting.run_table import TableOptions, project_rows, run_row
from wattlog.accounting.sites import site_catalog
from wattlog.accounting.verify import check_ledger
from wattlog.errors import ConfigError
from wattlog.numbers import check_number


def table(
    runs: Annotated[list[str] | None, typer.Argument(help="Run names or ids (default: every run).")] = None,
    project: Annotated[
        str | None,
        typer.Option("--project", help="Total a project's whole development beside its final run."),
    ] = None,
    reference: Annotated[
        bool, typer.Option("--reference", help="Add the published rows (Table 19, OPT-175B).")
    ] = False,
    fmt: Annotated[TableFormat, typer.Option("--format", help="Output format.")] = TableFormat.RICH,
    db: Annotated[
        str | None, typer.Option("--db", help="Ledger URL (default $WATTLOG_DB or ./wattlog.db).")
    ] = None,
    site: Annotated[
        str | None, typer.Option("--site", help="Site for every run (default: as recorded).")
    ] = None,
    sites_file: Annotated[Path | None, typer.Option("--sites-file", help="TOML file of extra sites.")] = None,
    intensity: Annotated[
        Path | None,
        typer.Option("--intensity", help="Hourly carbon intensity CSV (timestamp,kg_co2_per_kwh)."),
    ] = None,
    water: Annotated[
        WaterConvention, typer.Option("--water-convention", help="paper or green-grid.")
    ] = WaterConvention.PAPER,
    prometheus: Annotated[
        str | None,
        typer.Option("--prometheus", help="Take energy from this Prometheus (increase over the run)."),
    ] = None,
) -> None:
    """Print a Table-19-style footprint of runs: energy, PUE, carbon intensity, tCO2eq, WUE, water."""
    if runs and project:
        raise ConfigError("give run names or --project, not both")
    options = TableOptions(
        catalog=site_catalog(sites_file),
        site=site,
        intensity=HourlySeries.from_csv(intensity) if intensity is not None else None,
        convention=water,
        prometheus_url=prometheus,
    )
    rows: list[TableRow] = reference_table_rows() if reference else []
    extra_notes: list[str] = []
    if runs or project or not reference:
        engine = make_engine(db, create=False)
        try:
            ledger = Ledger(engine)
            check_ledger(ledger, describe_url(db))  # never print figures read from impossible rows
            if project:
                rows += project_rows(ledger, project, options)
            else:
                chosen = [ledger.get_run(r) for r in runs] if runs else ledger.runs()
                if not chosen:
                    raise ConfigError(f"the ledger {describe_url(db)} holds no runs yet")
                rows += [run_row(ledger, run, options) for run in chosen]
        finally:
            engine.dispose()
        extra_notes.append(f"Ledger: {describe_url(db)}.")
    show(render(rows, fmt, [*footnotes(rows), *extra_notes]))


def compact(
    older_than_days: Annotated[
        float, typer.Option("--older-than-days", help="Fold rows of hours older than this.")
    ] = 7.0,
    db: Annotated[
        str | None, typer.Option("--db", help="Ledger URL (default $WATTLOG_DB or ./wattlog.db).")
    ] = None,
) -> None:
    """Fold the ledger's old flush rows into hourly buckets (totals and hour-by-hour energy kept exactly)."""
    check_number("--older-than-days", older_than_days, low=0, high=100 * 365, hint="e.g. 7")
    engine = make_engine(db, create=False)
    try:
        ledger = Ledger(engine)
        check_ledger(ledger, describe_url(db))  # folding impossible rows into buckets would hide them
        done = ledger.compact_hourly(older_than_days * 86_400)
    finally:
        engine.dispose()
    print(f"ledger {describe_url(db)}: {done.raw_rows} raw rows folded into {done.hourly_rows} hourly rows")


def register(app: typer.Typer) -> None:
    """Add `wattlog table` and `wattlog compact` to the root app."""
    app.command("table")(table)
    app.command("compact")(compact)
