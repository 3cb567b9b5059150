"""`wattlog sensors` at 60, 80 and 120 columns: a table when it fits, one block per device when narrow."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from wattlog.telemetry.cli import print_discovery
from wattlog.telemetry.sensors.discovery import DiscoveryConfig, discover
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus


@pytest.mark.parametrize("width", [60, 80, 120])
def test_two_devices_fit_the_terminal_with_nothing_shredded(width: int, tmp_path: Path) -> None:
    sensor = SimulatedSensor(simulated_gpus(2))
    found = discover(DiscoveryConfig(backends=[], environ={}, powercap_root=tmp_path, extra=[sensor]))
    try:
        console = Console(file=io.StringIO(), width=width, highlight=False)
        print_discovery(found, console)
    finally:
        found.close()
    out = console.file.getvalue()  # type: ignore[attr-defined]
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines)
    assert len(lines) <= 30  # 115-153 lines at 80 columns: the notes column was two characters wide
    for uuid in ("GPU-sim-0000", "GPU-sim-0001", "estimate:cpu"):
        assert uuid in out  # whole, never folded
    assert "counter integrates true power" in " ".join(out.split())  # each note whole, in words
