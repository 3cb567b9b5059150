"""`wattlog agent`'s closing table: nothing cut at 60 or 80 columns, notes as numbered footnotes."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from wattlog.accounting.fleet.agent_report import device_grid
from wattlog.records import EnergyFigure, Kind, Source
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo

NOTE = (
    "counter vs sampled power over 1 s: sampled -0.00%; power published every 100 ms "
    "(the driver's timestamps); 32 of 43 reads repeated a publication"
)


def device(uuid: str, kind: Kind, source: Source, joules: float, notes: tuple[str, ...] = ()) -> DeviceEnergy:
    info = DeviceInfo(uuid, uuid, kind, source, has_counter=False)
    figure = EnergyFigure(kind, source, joules, joules * 0.6, joules * 1.4)
    return DeviceEnergy(info, figure, 100.0, 43, 0, 0.0, notes=notes)


ROWS = [
    device("estimate:cpu", Kind.CPU, Source.ESTIMATED, 7.2),
    device("GPU-1491-2b7e-4c1d-9f00-5e8a3c2d1b0a", Kind.GPU, Source.SIMULATED, 667.6, (NOTE,)),
    device("estimate:dram", Kind.DRAM, Source.ESTIMATED, 1.6),
]


@pytest.mark.parametrize("width", [60, 80])
def test_nothing_is_cut_at_narrow_widths(width: int) -> None:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(device_grid(ROWS))
    text = out.getvalue()
    assert "…" not in text  # before: "estimat…", "(0.003…", "1491-2…" at 80 columns
    assert max(len(line) for line in text.splitlines()) <= width
    words = " ".join(text.split())
    for figure in ("7.20 J", "0.185 Wh", "1.60 J", "0.188 Wh", "GPU-1491-2b7e-4c1d-9f00-5e8a3c2d1b0a"):
        assert figure in words or figure.replace(" ", "") in words.replace(" ", ""), figure
    assert f"[1] GPU-1491-2b7e-4c1d-9f00-5e8a3c2d1b0a: {NOTE}" in words  # the note whole, under the table


def test_each_device_with_notes_gets_one_number() -> None:
    lost = DeviceEnergy(
        DeviceInfo("GPU-b", "b", Kind.GPU, Source.COUNTER, has_counter=True),
        EnergyFigure(Kind.GPU, Source.COUNTER, 10.0, 9.0, 11.0),
        None,
        3,
        1,
        2.5,
        lost=True,
    )
    grid = device_grid([*ROWS, lost])
    assert [row[0] for row in grid.cells] == [
        "estimate:cpu",
        "GPU-1491-2b7e-4c1d-9f00-5e8a3c2d1b0a [1]",
        "estimate:dram",
        "GPU-b [2]",
        "total",
    ]
    assert grid.notes[1].startswith("[2] GPU-b: lost")
    assert grid.cells[3][6] == "1 (2.50 s)"
    assert grid.cells[-1][2] == "counter + estimated + simulated"
