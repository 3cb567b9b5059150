"""Telemetry commands: `wattlog sensors` (`wattlog agent` records through the ledger layer, in accounting)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from wattlog.numbers import MAX_SIMULATED_GPUS, check_number
from wattlog.options import HwmonRootOption, SimulateOption, WholeNodeOption

if TYPE_CHECKING:
    from wattlog.telemetry.sensors.base import Sensor
    from wattlog.telemetry.sensors.discovery import Discovery
    from wattlog.telemetry.types import DeviceInfo


def sensors(
    whole_node: WholeNodeOption = False,
    simulate: SimulateOption = 0,
    powercap_root: Annotated[Path, typer.Option(help="Root of the Linux powercap tree (RAPL).")] = Path(
        "/sys/class/powercap"
    ),
    hwmon_root: HwmonRootOption = None,
) -> None:
    """List the devices wattlog would measure: kind, energy counter, and the source label of each figure."""
    from wattlog.telemetry.selection import job_selection
    from wattlog.telemetry.sensors.discovery import DiscoveryConfig, discover

    check_number("--simulate", simulate, low=0, high=MAX_SIMULATED_GPUS)
    extra: list[Sensor] = []
    if simulate:
        from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus

        extra.append(SimulatedSensor(simulated_gpus(simulate)))
    chosen = job_selection(whole_node=True) if whole_node else None  # else each vendor's own visibility
    found = discover(DiscoveryConfig(chosen, powercap_root=powercap_root, extra=extra, hwmon_root=hwmon_root))
    try:
        print_discovery(found, Console(highlight=False))
    finally:
        found.close()


HEADERS = ("uuid", "name", "kind", "vendor", "profile", "scope", "counter", "source")
NOTE_MIN_WIDTH = 40
"""Below this width for the notes column, the devices are listed stacked (one block each)."""


def print_discovery(found: Discovery, console: Console) -> None:
    """The selection line, one row per device (vendor, sensor profile, scope, counter), the notes,
    then the vendor backends probed and who registered each (a plugin names its package).

    A terminal too narrow for the table and a readable notes column gets one block per device
    instead (at 80 columns the table's notes were two characters wide: 115 lines for two devices).
    """
    # notes are plain text: "pip install wattlog[amd]" must not be read as rich markup
    console.print(found.selection.describe(), markup=False)
    for note in found.selection.notes:
        console.print(f"  note: {note}", markup=False)
    rows = [_cells(device) for _, device in found.devices]
    fixed = sum(max(len(h), *(len(r[i]) for r in rows)) + 3 for i, h in enumerate(HEADERS)) if rows else 0
    if fixed + NOTE_MIN_WIDTH > console.width:
        for row in rows:
            _print_stacked(row, console)
    else:
        table = Table()
        for header in HEADERS:
            # a cut UUID is useless
            table.add_column(header, no_wrap=header not in ("name", "profile"), overflow="fold")
        table.add_column("note", ratio=1, overflow="fold")
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        console.print(table)
    for note in found.notes:
        console.print(f"- {note}", markup=False)
    if found.backends:  # what each vendor's backend is, and which package brought it
        console.print(f"vendor backends: {', '.join(found.backends)}", markup=False)


def _cells(device: DeviceInfo) -> list[str]:
    """The device's cells: uuid, name, kind, vendor, profile, scope, counter, source, note."""
    profile = device.profile
    return [
        device.uuid,
        device.name,
        str(device.kind),
        device.vendor.label if device.vendor is not None else "-",
        profile.label if profile is not None else "-",
        profile.scope if profile is not None else "-",
        "yes" if device.has_counter else "no",
        str(device.source),
        device.note,
    ]


def _print_stacked(row: list[str], console: Console) -> None:
    """One device as a block: its uuid and name, its labelled fields, its note (each wrapped, indented)."""
    uuid, name, *fields, note = row
    console.print(f"{uuid}: {name}", markup=False)
    labelled = ", ".join(f"{h} {v}" for h, v in zip(HEADERS[2:], fields, strict=True))
    console.print(Padding(Text(labelled), (0, 0, 0, 2), expand=False))
    if note:
        console.print(Padding(Text(note), (0, 0, 0, 2), expand=False))


def register(app: typer.Typer) -> None:
    """Add the telemetry commands to the root app."""
    app.command()(sensors)
