"""`wattlog agent`'s live panel: drawn and redrawn on a terminal, nothing on a pipe."""

from __future__ import annotations

import io

from rich.console import Console

from tests.telemetry.test_exporter import snapshot
from tests.waiting import wait_until
from wattlog.telemetry.live_panel import LivePanel, panel


def test_the_panel_shows_power_energy_and_band_per_device_and_lost_not_zero() -> None:
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(panel(snapshot()))
    text = out.getvalue()
    gpu = next(line for line in text.splitlines() if "Simulated H100" in line)
    assert "300.0 W" in gpu and "0.4167 Wh" in gpu and "0.3889 Wh - 0.4444 Wh" in gpu and "simulated" in gpu
    cpu = next(line for line in text.splitlines() if "cpu" in line.split())
    assert "lost" in cpu and " 0 W" not in cpu  # a lost device's power is no reading


def test_a_terminal_gets_a_panel_redrawn_with_new_figures() -> None:
    # nothing was shown between the agent's start notes and its final table
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    calls = []

    def counted() -> list:
        calls.append(1)
        return snapshot()

    with LivePanel(counted, console, refresh_s=0.05):
        wait_until(lambda: len(calls) >= 3, 10, "the panel was not redrawn")
    assert "Simulated H100" in out.getvalue() and "300.0 W" in out.getvalue()


def test_a_pipe_gets_no_panel() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=120)
    with LivePanel(snapshot, console, refresh_s=0.05):
        pass
    assert out.getvalue() == ""
