"""The ledger's commands: `wattlog table` (Table 19 of the OLMo 2 paper for recorded runs, projects
and published models; a project's development as the follow-up's Tables 1-3; power fluctuation;
CSV, JSON and model-card exports) and `wattlog compact` (accounting.commands.compact_cli).

What only some options use (--dcgm, --market-file, --power, --project, --reference, the HF card)
is imported where that option is handled: a plain `wattlog table RUN` is a new process each time,
and its import time is most of its second (issue 27)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Group
from rich.text import Text

from wattlog.accounting.carbon.intensity.registry import read_intensity
from wattlog.accounting.carbon.sites import get_site, site_catalog
from wattlog.accounting.commands.compact_cli import compact
from wattlog.accounting.commands.table_options import (
    AuthorityOption,
    ByOption,
    DcgmOption,
    EndOption,
    GpusOption,
    HostsOption,
    IntensityFormatOption,
    IntensityOption,
    MarketFileOption,
    NotesFileOption,
    OverheadOption,
    OverheadSourceOption,
    PowerOption,
    ProjectOption,
    PrometheusOption,
    ReferenceOption,
    RunsOption,
    SiteOption,
    SlurmJobOption,
    StartOption,
    StrictOption,
    WaterOption,
)
from wattlog.accounting.devices import Overhead
from wattlog.accounting.publishing.footprint import WaterConvention
from wattlog.accounting.publishing.render import TableFormat, TableRow, footnotes, render, render_grid, show
from wattlog.errors import ConfigError
from wattlog.options import DbOption, FormatOption, SitesFileOption

if TYPE_CHECKING:
    from wattlog.accounting.ledger.store import Ledger
    from wattlog.accounting.ledger.views import RunInfo
    from wattlog.accounting.publishing.run_table import TableOptions

_DCGM_NEEDS = "--dcgm needs --prometheus URL, --start, --end and --site (see `wattlog sites`)"

RUN_IMPORTS = (
    "wattlog.accounting.ledger.store",
    "wattlog.accounting.ledger.verify",
    "wattlog.accounting.publishing.run_table",
    "wattlog.accounting.publishing.project_table",
)
"""What `wattlog table` and `compact` import as they start: SQLAlchemy, SQLModel and the models, about a
million objects, imported with the collector paused in a new process (wattlog.cli.run; issue 27)."""


def table(
    runs: RunsOption = None,
    project: ProjectOption = None,
    by: ByOption = None,
    reference: ReferenceOption = False,
    fmt: FormatOption = TableFormat.RICH,
    notes_file: NotesFileOption = None,
    db: DbOption = None,
    site: SiteOption = None,
    sites_file: SitesFileOption = None,
    intensity: IntensityOption = None,
    intensity_format: IntensityFormatOption = "auto",
    authority: AuthorityOption = None,
    water: WaterOption = WaterConvention.PAPER,
    prometheus: PrometheusOption = None,
    dcgm: DcgmOption = False,
    start: StartOption = None,
    end: EndOption = None,
    hosts: HostsOption = "",
    gpus: GpusOption = "",
    slurm_job: SlurmJobOption = None,
    overhead: OverheadOption = None,
    overhead_source: OverheadSourceOption = None,
    power: PowerOption = False,
    strict: StrictOption = False,
    market_file: MarketFileOption = None,
) -> None:
    """Print a Table-19-style footprint of runs: energy, PUE, carbon intensity, tCO2eq, WUE, water."""
    from wattlog.accounting.publishing.run_table import TableOptions

    _check_choice(bool(runs), project, by, market_file is not None and bool(project or dcgm))
    out = _Output(fmt, notes_file)
    hourly = read_intensity(intensity, intensity_format, authority=authority) if intensity else None
    if dcgm:
        from wattlog.accounting.fleet.dcgm_energy import dcgm_row_at  # HTTP client and parsers: --dcgm only

        if not prometheus or not start or not end or not site:
            raise ConfigError(_DCGM_NEEDS)
        where = get_site(site, site_catalog(sites_file))
        scope = {"hosts": hosts, "gpus": gpus, "job": slurm_job, "intensity": hourly, "convention": water}
        row = dcgm_row_at(db, prometheus, start, end, where, **scope)
        rows = [*(_reference_rows() if reference else []), row]
        _emit(rows, out, [*footnotes(rows), f"Energy: {prometheus} (dcgm-exporter)."])
        return
    options = TableOptions(
        catalog=site_catalog(sites_file),
        site=site,
        intensity=hourly,
        convention=water,
        prometheus_url=prometheus,
        overhead=_overhead(overhead, overhead_source),
        strict=strict,
    )
    _ledger_table(_Selection(runs or [], project, by, reference, power, market_file), db, options, out)


def _reference_rows() -> list[TableRow]:
    """The published rows (Table 19, OPT-175B), read only when asked for."""
    from wattlog.accounting.publishing.reference import reference_table_rows

    return reference_table_rows()


def _check_choice(runs: bool, project: str | None, by: str | None, market_clash: bool) -> None:
    """Refuse option combinations that cannot make one table."""
    from wattlog.accounting.publishing.project_table import GROUPINGS

    if runs and project:
        raise ConfigError("give run names or --project, not both")
    if market_clash:
        raise ConfigError("--market-file adds columns to runs' rows: name runs (not --project or --dcgm)")
    if by is not None and (not project or by not in GROUPINGS):
        raise ConfigError(f"--by needs --project and one of {', '.join(GROUPINGS)}")


@dataclass(frozen=True, slots=True)
class _Output:
    """Where and how a table is printed."""

    fmt: TableFormat
    notes_file: Path | None


@dataclass(frozen=True, slots=True)
class _Selection:
    """What a ledger table shows: runs by name (none: all), or a project, and what to add."""

    runs: list[str]
    project: str | None
    by: str | None
    reference: bool
    power: bool
    market_file: Path | None = None


def _ledger_table(selection: _Selection, db: str | None, options: TableOptions, out: _Output) -> None:
    """The table of recorded runs (after the published rows, with --reference)."""
    from wattlog.accounting.fleet.calibration import stored_calibrations
    from wattlog.accounting.ledger.engine import describe_url, make_engine
    from wattlog.accounting.ledger.lease import reap_before_reading
    from wattlog.accounting.ledger.store import Ledger

    rows: list[TableRow] = _reference_rows() if selection.reference else []
    if selection.reference and not selection.runs and not selection.project and _no_sqlite_file(db):
        _emit(rows, out, [*footnotes(rows), f"No ledger at {describe_url(db)}: published rows only."])
        return
    engine = make_engine(db, create=False)
    options = replace(options, calibrations={**stored_calibrations(), **options.calibrations})
    try:
        ledger = Ledger(engine)
        reap_before_reading(ledger)  # a run whose agent died shows as lost, with its gap
        if selection.project and selection.by:
            _check_runs(ledger, ledger.runs(selection.project), describe_url(db))
            _show_project(ledger, selection.project, selection.by, options, out.fmt, out.notes_file)
            return
        chosen, run_rows, tail = _chosen_rows(ledger, selection, options, describe_url(db))
        if selection.market_file is not None:  # market-based beside location-based, method named
            from wattlog.accounting.publishing.market_columns import add_market_columns

            run_rows, market_notes = add_market_columns(
                ledger, chosen, run_rows, options, selection.market_file
            )
            tail = [*market_notes, *tail]
        _show_runs(ledger, chosen, [*rows, *run_rows], selection, options, out, tail)
    finally:
        engine.dispose()


def _chosen_rows(
    ledger: Ledger, selection: _Selection, options: TableOptions, where: str
) -> tuple[list[RunInfo], list[TableRow], list[str]]:
    """The runs shown, their rows (a project's with its subtotals) and the notes that close the table.

    Named runs are shown whatever their role; without names, the final runs (Table 19 lists
    final runs; development runs are a project's, `--project`).
    """
    from wattlog.accounting.ledger.models import Phase
    from wattlog.accounting.publishing.project_table import run_phase
    from wattlog.accounting.publishing.run_table import run_row

    tail = [f"Ledger: {where}."]
    if selection.project:
        chosen = ledger.runs(selection.project)
        _check_runs(ledger, chosen, where)
        from wattlog.accounting.publishing.project_rows import project_rows

        return chosen, project_rows(ledger, selection.project, options), tail
    if selection.runs:
        chosen = [ledger.get_run(r) for r in selection.runs]
        _check_runs(ledger, chosen, where)
    else:
        every = ledger.runs()
        _check_runs(ledger, every, where)  # before naming what the ledger holds
        chosen = [run for run in every if run_phase(run) == Phase.FINAL]
        others = len(every) - len(chosen)
        if others and not chosen and not selection.reference:
            raise ConfigError(
                f"the ledger {where} holds no final runs, {others} development run(s): name one "
                "(`wattlog runs` lists them) or mark it: wattlog runs relabel NAME --role final"
            )
        if others:
            tail.insert(
                0,
                f"{others} development run(s) not shown: `wattlog runs` lists them, "
                "`wattlog table NAME` shows one.",
            )
    if not chosen and not selection.reference:
        raise ConfigError(f"the ledger {where} holds no runs yet")
    rows = [run_row(ledger, run, options) for run in chosen]  # the runs last: on screen at the end
    return chosen, rows, tail


def _check_runs(ledger: Ledger, runs: list[RunInfo], where: str) -> None:
    """Never compute figures from impossible rows: the shown runs' rows are checked (not every run's)."""
    from wattlog.accounting.ledger.verify import check_ledger

    check_ledger(ledger, where, [run.id for run in runs if run.id is not None])


def _show_runs(
    ledger: Ledger,
    chosen: list[RunInfo],
    rows: list[TableRow],
    selection: _Selection,
    options: TableOptions,
    out: _Output,
    tail: list[str],
) -> None:
    """Print the rows (or one run's model-card facts), then the power fluctuation grid if asked."""
    if out.fmt is TableFormat.HF:
        if len(chosen) != 1 or selection.project:
            raise ConfigError("--format hf describes one run: give exactly one run name")
        from wattlog.accounting.publishing.model_card import model_card_facts

        print(model_card_facts(ledger, chosen[0], rows[-1], options), end="")
        return
    _emit(rows, out, [*footnotes(rows), *tail])
    if selection.power and chosen:
        from wattlog.accounting.publishing.power_report import power_grid

        headers, cells, notes = power_grid(ledger, chosen)
        show(render_grid(headers, cells, notes, _grid_format(out.fmt), right=set(range(1, 8))))


def _overhead(factor: float | None, source: str | None) -> Overhead | None:
    if factor is None:
        if source:
            raise ConfigError("--overhead-source needs --overhead FACTOR")
        return None
    return Overhead(factor, source) if source else Overhead(factor)


def _no_sqlite_file(db: str | None) -> bool:
    """Whether the ledger is a SQLite file that does not exist (nothing to read, nothing to create)."""
    from sqlalchemy.engine import make_url

    from wattlog.accounting.ledger.engine import resolve_url

    url = make_url(resolve_url(db))
    return url.get_backend_name() == "sqlite" and bool(url.database) and not Path(url.database or "").exists()


def _grid_format(fmt: TableFormat) -> TableFormat:
    """Grids other than Table 19 have no JSON or model-card form: JSON and HF fall back to Markdown."""
    return TableFormat.MARKDOWN if fmt in (TableFormat.JSON, TableFormat.HF) else fmt


def _emit(rows: list[TableRow], out: _Output, notes: list[str]) -> None:
    """Render rows; a CSV's notes go to `out.notes_file` or stderr, never into the data."""
    if out.fmt is TableFormat.HF:
        raise ConfigError("--format hf describes one run: give exactly one run name")
    show(render(rows, out.fmt, notes))
    if out.fmt is TableFormat.CSV or out.notes_file is not None:
        _write_notes(notes, out.notes_file)


def _write_notes(notes: list[str], notes_file: Path | None) -> None:
    text = "".join(f"{note}\n" for note in notes)
    if notes_file is None:
        sys.stderr.write(text)
        return
    try:
        notes_file.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot write notes to {notes_file}: {error.strerror or error}") from None


def _show_project(
    ledger: Ledger, project: str, by: str, options: TableOptions, fmt: TableFormat, notes_file: Path | None
) -> None:
    from wattlog.accounting.publishing.project_table import project_tables

    grids = project_tables(ledger, project, by, options)
    if fmt in (TableFormat.JSON, TableFormat.CSV):
        from wattlog.accounting.publishing.exports import grids_csv, grids_json

        show(grids_json(grids) if fmt is TableFormat.JSON else grids_csv(grids))
        if fmt is TableFormat.CSV or notes_file is not None:
            _write_notes([n for g in grids for n in g.notes], notes_file)
        return
    out_fmt = _grid_format(fmt)
    notes: list[str] = []
    parts: list[str | Group] = []
    for grid in grids:
        notes += grid.notes
        rendered = render_grid(grid.headers, grid.cells, grid.notes, out_fmt, grid.right)
        if isinstance(rendered, str):
            heading = f"### {grid.title}\n\n" if out_fmt is TableFormat.MARKDOWN else ""
            parts.append(heading + rendered)
        else:
            parts.append(Group(Text(grid.title, style="bold"), rendered, Text("")))
    if all(isinstance(p, str) for p in parts):
        show("\n".join(str(p) for p in parts))
    else:
        show(Group(*parts))
    if notes_file is not None:
        _write_notes(notes, notes_file)


def register(app: typer.Typer) -> None:
    """Add `wattlog table` and `wattlog compact` to the root app."""
    app.command("table")(table)
    app.command("compact")(compact)
