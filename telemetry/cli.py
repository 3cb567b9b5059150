"""Telemetry commands: `wattlog sensors` (`wattlog agent` records through the ledger layer, in accounting)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from wattlog.numbers import MAX_SIMULATED_GPUS, check_number
from wattlog.options import SimulateOption, WholeNodeOption
from wattlog.telemetry.selection import job_selection
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.discovery import Discovery, DiscoveryConfig, discover


def sensors(
    whole_node: WholeNodeOption = False,
    simulate: SimulateOption = 0,
    powercap_root: Annotated[Path, typer.Option(help="Root of the Linux powercap tree (RAPL).")] = Path(
        "/sys/class/powercap"
    ),
) -> None:
    """List the devices wattlog would measure: kind, energy counter, and the source label of each figure."""
    check_number("--simulate", simulate, low=0, high=MAX_SIMULATED_GPUS)
    extra: list[Sensor] = []
    if simulate:
        from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus

        extra.append(SimulatedSensor(simulated_gpus(simulate)))
    chosen = job_selection(whole_node=True) if whole_node else None  # else each vendor's own visibility
    found = discover(DiscoveryConfig(chosen, powercap_root=powercap_root, extra=extra))
    try:
        print_discovery(found, Console(highlight=False))
    finally:
        found.close()


def print_discovery(found: Discovery, console: Console) -> None:
    """The selection line, one row per device (vendor, sensor profile, scope, counter), the notes,
    then the vendor backends probed and who registered each (a plugin names its package)."""
    # notes are plain text: "pip install wattlog[amd]" must not be read as rich markup
    console.print(found.selection.describe(), markup=False)
    for note in found.selection.notes:
        console.print(f"  note: {note}", markup=False)
    table = Table()
    for header in ("uuid", "name", "kind", "vendor", "profile", "scope", "counter", "source"):
        table.add_column(
            header, no_wrap=header not in ("name", "profile"), overflow="fold"
        )  # a cut UUID is useless
    table.add_column("note", ratio=1, overflow="fold")
    for _, device in found.devices:
        counter = "yes" if device.has_counter else "no"
        profile = device.profile
        table.add_row(
            device.uuid,
            device.name,
            str(device.kind),
            device.vendor.label if device.vendor is not None else "-",
            profile.label if profile is not None else "-",
            profile.scope if profile is not None else "-",
            counter,
            str(device.source),
            escape(device.note),
        )
    console.print(table)
    for note in found.notes:
        console.print(f"- {note}", markup=False)
    if found.backends:  # what each vendor's backend is, and which package brought it
        console.print(f"vendor backends: {', '.join(found.backends)}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the telemetry commands to the root app."""
    app.command()(sensors)
