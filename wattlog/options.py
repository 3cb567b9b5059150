"""The command-line options more than one command takes, each defined once.

Every CLI module (telemetry, accounting, trainer, dashboards) imports its shared
options from here, so ``--db`` or ``--lock-dir`` reads and behaves the same in
every command. Only typer is imported: this sits in the lowest layer, below
every package. An option one command alone takes stays beside that command.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class TableFormat(StrEnum):
    """Output formats of the commands that print tables (`wattlog table`, `sites`, `windows`)."""

    RICH = "rich"
    MARKDOWN = "markdown"
    LATEX = "latex"
    CSV = "csv"
    HTML = "html"
    JSON = "json"
    HF = "hf"


class DiscloseFormat(StrEnum):
    """The published forms `wattlog disclose` writes (a form, not a table: its own closed set)."""

    MDF = "mdf"
    JSON = "json"
    SPDX = "spdx"
    CYCLONEDX = "cyclonedx"
    SCI = "sci"


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Ledger URL (default $WATTLOG_DB, else your own in ~/.local/share/wattlog-ledger); "
        "secrets from env.",
    ),
]
SitesFileOption = Annotated[
    Path | None,
    typer.Option("--sites-file", help="TOML file of extra sites ([sites.NAME] tables); overrides by name."),
]
CommandArgument = Annotated[
    list[str] | None, typer.Argument(help="Command to run and measure (after --); stop when it exits.")
]
SecondsOption = Annotated[float | None, typer.Option("--seconds", help="Stop after this many seconds.")]
MetricsPortOption = Annotated[
    int, typer.Option("--port", help="Metrics port; 0 picks a free one; -1 serves nothing.")
]
LocalPortOption = Annotated[int, typer.Option("--port", help="Metrics port on 127.0.0.1 (0: any free port).")]
PeriodMsOption = Annotated[float, typer.Option("--period-ms", help="Sampling period, milliseconds.")]
FlushOption = Annotated[
    float, typer.Option("--flush-s", help="Seconds between flushes of energy rows to the sinks (the ledger).")
]
SimulateOption = Annotated[
    int,
    typer.Option("--simulate", min=0, help="Add N simulated GPUs (training-like power, labelled simulated)."),
]
WholeNodeOption = Annotated[
    bool, typer.Option("--whole-node", help="Measure every GPU of the node, not only this job's.")
]
LockDirOption = Annotated[
    Path | None,
    typer.Option(
        "--lock-dir", help="Folder of the device locks every agent of the node shares ($WATTLOG_LOCK_DIR)."
    ),
]
LingerOption = Annotated[
    float,
    typer.Option(
        "--linger-s",
        help="At the end, serve until the next scrape read the final counters and the finished mark "
        "(at most this; no wait when nothing scrapes).",
    ),
]
SampleNodesOption = Annotated[
    int | None,
    typer.Option(
        "--sample-nodes",
        min=1,
        help="Measure K of the job's nodes (spread evenly), extrapolate the rest ($WATTLOG_SAMPLE_NODES).",
    ),
]
ProjectOption = Annotated[str, typer.Option("--project", help="Project the run belongs to.")]
SiteOption = Annotated[
    str, typer.Option("--site", help="Site of the run, from `wattlog sites` (taken when the run is created).")
]
FormatOption = Annotated[
    TableFormat,
    typer.Option("--format", help="rich, markdown, latex, csv, html or json (hf: `wattlog table`, one run)."),
]
DiscloseFormatOption = Annotated[
    DiscloseFormat,
    typer.Option("--format", help="mdf (EU AI Act form items), json, spdx, cyclonedx, sci."),
]
HwmonRootOption = Annotated[
    Path | None,
    typer.Option(
        "--hwmon-root",
        help="Where Grace's ACPI power meters are read ($WATTLOG_HWMON_ROOT; default /sys/class/hwmon).",
    ),
]
