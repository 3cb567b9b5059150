"""Telemetry commands: `wattlog sensors` (`wattlog agent` records through the ledger layer, in accounting)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
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
    found = discover(
        DiscoveryConfig(job_selection(whole_node=whole_node), powercap_root=powercap_root, extra=extra)
    )
    try:
        print_discovery(found, Console(highlight=False))
    finally:
        found.close()


def print_discovery(found: Discovery, console: Console) -> None:
    """The selection line, one table row per device, then the notes on backends not used."""
    console.print(found.selection.describe())
    for note in found.selection.notes:
        console.print(f"  note: {note}")
    table = Table()
    for header in ("uuid", "name", "kind", "counter", "source"):
        table.add_column(header, no_wrap=header != "name", overflow="fold")  # a cut UUID is useless
    table.add_column("note", ratio=1, overflow="fold")
    for _, device in found.devices:
        counter = "yes" if device.has_counter else "no"
        table.add_row(device.uuid, device.name, str(device.kind), counter, str(device.source), device.note)
    console.print(table)
    for note in found.notes:
        console.print(f"- {note}")


def register(app: typer.Typer) -> None:
    """Add the telemetry commands to the root app."""
    app.command()(sensors)
