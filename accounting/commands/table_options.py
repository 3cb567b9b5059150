"""The options of `wattlog table` (accounting.commands.table_cli); the ones several commands share come
from wattlog.options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wattlog.accounting.carbon.intensity.registry import formats_help
from wattlog.accounting.publishing.footprint import WaterConvention

RunsOption = Annotated[list[str] | None, typer.Argument(help="Run names or ids (default: every run).")]
ProjectOption = Annotated[
    str | None,
    typer.Option("--project", help="Total a project's whole development beside its final run."),
]
ByOption = Annotated[
    str | None,
    typer.Option("--by", help="With --project: the follow-up's Tables 1-3, grouped by group|stage|phase."),
]
ReferenceOption = Annotated[
    bool, typer.Option("--reference", help="Add the published rows (Table 19, OPT-175B) before the runs.")
]
NotesFileOption = Annotated[
    Path | None, typer.Option("--notes", help="Write the notes to this file (CSV: else to stderr).")
]
SiteOption = Annotated[str | None, typer.Option("--site", help="Site for every run (default: as recorded).")]
IntensityOption = Annotated[
    Path | None,
    typer.Option(
        "--intensity",
        help="Hourly carbon intensity file (overrides the site's source), in one of the formats of "
        "--intensity-format.",
    ),
]
IntensityFormatOption = Annotated[
    str,
    typer.Option("--intensity-format", help=f"The file's format: {formats_help()}."),
]
AuthorityOption = Annotated[
    str | None, typer.Option("--authority", help="EIA-930 balancing authority code (e.g. ERCO).")
]
WaterOption = Annotated[WaterConvention, typer.Option("--water-convention", help="paper or green-grid.")]
PrometheusOption = Annotated[
    str | None,
    typer.Option(
        "--prometheus", help="Take energy from this Prometheus (what its counters counted in the run)."
    ),
]
DcgmOption = Annotated[
    bool,
    typer.Option(
        "--dcgm",
        help="With --prometheus: GPU energy of --start..--end from dcgm-exporter's "
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter (no ledger needed).",
    ),
]
StartOption = Annotated[
    str | None, typer.Option("--start", help="With --dcgm: start, ISO 8601 (UTC) or Unix seconds.")
]
EndOption = Annotated[str | None, typer.Option("--end", help="With --dcgm: end, likewise.")]
HostsOption = Annotated[
    str, typer.Option("--hosts", help="With --dcgm: SLURM node list (node[01-04]) or host names.")
]
GpusOption = Annotated[
    str, typer.Option("--gpus", help="With --dcgm: GPU indices or UUIDs, comma-separated.")
]
SlurmJobOption = Annotated[
    str | None,
    typer.Option("--slurm-job", help="With --dcgm: job id (dcgm-exporter's hpc_job label)."),
]
OverheadOption = Annotated[
    float | None,
    typer.Option(
        "--overhead",
        help="Multiply GPU energy by this for the rest of the server on runs that measured only GPUs "
        "(e.g. 1.74, Olmo 3 follow-up arXiv 2605.01158).",
    ),
]
OverheadSourceOption = Annotated[
    str | None, typer.Option("--overhead-source", help="Where your --overhead factor comes from.")
]
PowerOption = Annotated[
    bool, typer.Option("--power", help="Also show power fluctuation: % of limit, dips, swing, ramp.")
]
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Refuse a run the validity gate finds invalid, with its reasons (finished, nothing simulated, "
        "every device for the whole run, gaps under 1 %, counters checked at start-up, rows inside the run, "
        "intensity hours covered); each row shown says 'measurement valid'. Without it every format still "
        "marks an invalid run.",
    ),
]
MarketFileOption = Annotated[
    Path | None,
    typer.Option(
        "--market-file",
        help="TOML with [sites.NAME.market] tables: adds market-based CO2 (annual and hourly matching) "
        "beside the location-based column.",
    ),
]
