"""`wattlog agent`'s live panel: power, energy and band per device on a terminal; nothing in a pipe."""

from __future__ import annotations

import io

from rich.console import Console

from wattlog.accounting.commands.node_cli import live_view
from wattlog.accounting.publishing.live_panel import live_panel
from wattlog.records import EnergyFigure, Kind, Source
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo


def device(uuid: str, energy_j: float, power_w: float | None, samples: int = 10) -> DeviceEnergy:
    info = DeviceInfo(uuid=uuid, name=uuid, kind=Kind.GPU, source=Source.COUNTER, has_counter=True)
    figure = EnergyFigure(Kind.GPU, Source.COUNTER, energy_j, energy_j * 0.98, energy_j * 1.02)
    return DeviceEnergy(info, figure, power_w, samples, 0, 0.0)


def render(devices: list[DeviceEnergy], width: int = 100) -> str:
    console = Console(file=io.StringIO(), width=width, highlight=False)
    console.print(live_panel(lambda: devices, lambda: 12.0))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_each_device_shows_power_energy_band_and_source_and_the_total() -> None:
    out = render([device("GPU-0", 7200.0, 300.0), device("GPU-1", 3600.0, None, samples=0)])
    [gpu0] = [line for line in out.splitlines() if "GPU-0" in line]
    assert "300 W" in gpu0 and "2.00 Wh" in gpu0 and "1.96 - 2.04 Wh" in gpu0 and "counter" in gpu0
    [gpu1] = [line for line in out.splitlines() if "GPU-1" in line]
    assert "0 J" not in gpu1 and gpu1.count(" - ") >= 2  # before any reading: "-", never 0
    [total] = [line for line in out.splitlines() if "total" in line]
    assert "300 W" in total and "Wh" not in total  # a device not read yet: the total is unknown
    assert "measuring for 12 s" in out
    both = render([device("GPU-0", 7200.0, 300.0), device("GPU-1", 3600.0, 100.0)])
    [total] = [line for line in both.splitlines() if "total" in line]
    assert "400 W" in total and "3.00 Wh" in total and "2.94 - 3.06 Wh" in total


def test_only_a_terminal_gets_the_live_view() -> None:
    class Runner:
        def snapshot(self) -> list[DeviceEnergy]:
            return [device("GPU-0", 7200.0, 300.0)]

    pipe = Console(file=io.StringIO(), width=100)
    with live_view(pipe, Runner()):  # type: ignore[arg-type]
        pass
    assert pipe.file.getvalue() == ""  # type: ignore[attr-defined]
    terminal = Console(file=io.StringIO(), width=100, force_terminal=True)
    with live_view(terminal, Runner()):  # type: ignore[arg-type]
        pass
    assert "GPU-0" in terminal.file.getvalue()  # type: ignore[attr-defined]
