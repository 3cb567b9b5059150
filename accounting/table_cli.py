"""The ledger's commands: `wattlog table` (Table 19 of the OLMo 2 paper for recorded runs, projects
and published models; a project's development as the follow-up's Tables 1-3; power fluctuation;
CSV, JSON and model-card exports) and `wattlog compact` (accounting.compact_cli)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Group
from rich.text import Text
from sqlalchemy.engine import make_url

from wattlog.accounting.calibrate_cli import stored_calibrations
from wattlog.accounting.compact_cli import compact
from wattlog.accounting.dcgm_energy import dcgm_row_at
from wattlog.accounting.devices import Overhead
from wattlog.accounting.exports import grids_csv, grids_json
from wattlog.accounting.footprint import WaterConvention
from wattlog.accounting.intensity.registry import formats_help, read_intensity
from wattlog.accounting.ledger.engine import describe_url, make_engine, resolve_url
from wattlog.accounting.ledger.lease import reap_before_reading
from wattlog.accounting.ledger.models import Phase
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import RunInfo
from wattlog.accounting.market_columns import MarketFileOption, add_market_columns
from wattlog.accounting.model_card import model_card_facts
from wattlog.accounting.power_report import power_grid
from wattlog.accounting.project_rows import project_rows
from wattlog.accounting.project_table import GROUPINGS, project_tables, run_phase
from wattlog.accounting.reference import reference_table_rows
from wattlog.accounting.render import TableFormat, TableRow, footnotes, render, render_grid, show
from wattlog.accounting.run_table import TableOptions, run_row
from wattlog.accounting.sites import get_site, site_catalog
from wattlog.accounting.validity import ValidityLimits
from wattlog.accounting.verify import check_ledger
from wattlog.errors import ConfigError
from wattlog.options import DbOption, FormatOption, SitesFileOption

# The options of `wattlog table` (shared ones come from wattlog.options).
_RunsOption = Annotated[list[str] | None, typer.Argument(help="Run names or ids (default: every run).")]
_ProjectOption = Annotated[
    str | None,
    typer.Option("--project", help="Total a project's whole development beside its final run."),
]
_ByOption = Annotated[
    str | None,
    typer.Option("--by", help="With --project: the follow-up's Tables 1-3, grouped by group|stage|phase."),
]
_ReferenceOption = Annotated[
    bool, typer.Option("--reference", help="Add the published rows (Table 19, OPT-175B) before the runs.")
]
_NotesFileOption = Annotated[
    Path | None, typer.Option("--notes", help="Write the notes to this file (CSV: else to stderr).")
]
_SiteOption = Annotated[str | None, typer.Option("--site", help="Site for every run (default: as recorded).")]
_IntensityOption = Annotated[
    Path | None,
    typer.Option(
        "--intensity",
        help="Hourly carbon intensity file (overrides the site's source), in one of the formats of "
        "--intensity-format.",
    ),
]
_IntensityFormatOption = Annotated[
    str,
    typer.Option("--intensity-format", help=f"The file's format: {formats_help()}."),
]
_AuthorityOption = Annotated[
    str | None, typer.Option("--authority", help="EIA-930 balancing authority code (e.g. ERCO).")
]
_WaterOption = Annotated[WaterConvention, typer.Option("--water-convention", help="paper or green-grid.")]
_PrometheusOption = Annotated[
    str | None,
    typer.Option(
        "--prometheus", help="Take energy from this Prometheus (what its counters counted in the run)."
    ),
]
_DcgmOption = Annotated[
    bool,
    typer.Option(
        "--dcgm",
        help="With --prometheus: GPU energy of --start..--end from dcgm-exporter's "
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter (no ledger needed).",
    ),
]
_StartOption = Annotated[
    str | None, typer.Option("--start", help="With --dcgm: start, ISO 8601 (UTC) or Unix seconds.")
]
_EndOption = Annotated[str | None, typer.Option("--end", help="With --dcgm: end, likewise.")]
_HostsOption = Annotated[
    str, typer.Option("--hosts", help="With --dcgm: SLURM node list (node[01-04]) or host names.")
]
_GpusOption = Annotated[
    str, typer.Option("--gpus", help="With --dcgm: GPU indices or UUIDs, comma-separated.")
]
_SlurmJobOption = Annotated[
    str | None,
    typer.Option("--slurm-job", help="With --dcgm: job id (dcgm-exporter's hpc_job label)."),
]
_OverheadOption = Annotated[
    float | None,
    typer.Option(
        "--overhead",
        help="Multiply GPU energy by this for the rest of the server on runs that measured only GPUs "
        "(e.g. 1.74, Olmo 3 follow-up arXiv 2605.01158).",
    ),
]
_OverheadSourceOption = Annotated[
    str | None, typer.Option("--overhead-source", help="Where your --overhead factor comes from.")
]
_PowerOption = Annotated[
    bool, typer.Option("--power", help="Also show power fluctuation: % of limit, dips, swing, ramp.")
]
_StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Gate every run (finished, nothing simulated, every device for the whole run, gaps under 1 %, "
        "counters checked at start-up, rows inside the run, intensity hours covered): each row says "
        "'measurement valid', and a run that is not is refused, with its reasons (CSV/JSON: always gated).",
    ),
]
_DCGM_NEEDS = "--dcgm needs --prometheus URL, --start, --end and --site (see `wattlog sites`)"


def table(
    runs: _RunsOption = None,
    project: _ProjectOption = None,
    by: _ByOption = None,
    reference: _ReferenceOption = False,
    fmt: FormatOption = TableFormat.RICH,
    notes_file: _NotesFileOption = None,
    db: DbOption = None,
    site: _SiteOption = None,
    sites_file: SitesFileOption = None,
    intensity: _IntensityOption = None,
    intensity_format: _IntensityFormatOption = "auto",
    authority: _AuthorityOption = None,
    water: _WaterOption = WaterConvention.PAPER,
    prometheus: _PrometheusOption = None,
    dcgm: _DcgmOption = False,
    start: _StartOption = None,
    end: _EndOption = None,
    hosts: _HostsOption = "",
    gpus: _GpusOption = "",
    slurm_job: _SlurmJobOption = None,
    overhead: _OverheadOption = None,
    overhead_source: _OverheadSourceOption = None,
    power: _PowerOption = False,
    strict: _StrictOption = False,
    market_file: MarketFileOption = None,
) -> None:
    """Print a Table-19-style footprint of runs: energy, PUE, carbon intensity, tCO2eq, WUE, water."""
    _check_choice(bool(runs), project, by, market_file is not None and bool(project or dcgm))
    out = _Output(fmt, notes_file)
    hourly = read_intensity(intensity, intensity_format, authority=authority) if intensity else None
    if dcgm:
        if not prometheus or not start or not end or not site:
            raise ConfigError(_DCGM_NEEDS)
        chosen = get_site(site, site_catalog(sites_file))
        row = dcgm_row_at(
            db,
            prometheus,
            start,
            end,
            chosen,
            hosts=hosts,
            gpus=gpus,
            job=slurm_job,
            intensity=hourly,
            convention=water,
        )
        rows = [*(reference_table_rows() if reference else []), row]
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


def _check_choice(runs: bool, project: str | None, by: str | None, market_clash: bool) -> None:
    """Refuse option combinations that cannot make one table."""
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
    rows: list[TableRow] = reference_table_rows() if selection.reference else []
    if selection.reference and not selection.runs and not selection.project and _no_sqlite_file(db):
        _emit(rows, out, [*footnotes(rows), f"No ledger at {describe_url(db)}: published rows only."])
        return
    engine = make_engine(db, create=False)
    options = replace(options, calibrations={**stored_calibrations(), **options.calibrations})
    # every format marks an invalid run (text in its notes, CSV/JSON in `valid` too): Table 19's rule
    options = replace(options, validity=options.validity or ValidityLimits())
    try:
        ledger = Ledger(engine)
        reap_before_reading(ledger)  # a run whose agent died shows as lost, with its gap
        if selection.project and selection.by:
            _check_runs(ledger, ledger.runs(selection.project), describe_url(db))
            _show_project(ledger, selection.project, selection.by, options, out.fmt, out.notes_file)
            return
        chosen, run_rows, tail = _chosen_rows(ledger, selection, options, describe_url(db))
        if selection.market_file is not None:  # market-based beside location-based, method named
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
    tail = [f"Ledger: {where}."]
    if selection.project:
        chosen = ledger.runs(selection.project)
        _check_runs(ledger, chosen, where)
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
        print(model_card_facts(ledger, chosen[0], rows[-1], options), end="")
        return
    _emit(rows, out, [*footnotes(rows), *tail])
    if selection.power and chosen:
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
    grids = project_tables(ledger, project, by, options)
    if fmt in (TableFormat.JSON, TableFormat.CSV):
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
