"""`wattlog agent`'s live panel: power, energy and band of each device, redrawn while it measures.

Between its start notes and its final table the agent printed nothing; on a terminal it now
redraws this panel (twice a second) from the integrator's snapshot, which never touches the
hardware. In a pipe or a log nothing is redrawn: the final table says it all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.table import Table

from wattlog.accounting.publishing.grids import MISSING
from wattlog.accounting.units import readable, sig3, unit_for
from wattlog.telemetry.types import DeviceEnergy

__all__ = ["live_panel"]


def live_panel(snapshot: Callable[[], Sequence[DeviceEnergy]], elapsed_s: Callable[[], float]) -> Table:
    """One row per device: power now, energy so far with its band (one unit), source; a total row.

    Args:
        snapshot: The agent's cumulative energy per device.
        elapsed_s: Seconds since the agent started (the panel's title).
    """
    devices = list(snapshot())
    table = Table(title=f"measuring for {elapsed_s():.0f} s (Ctrl-C stops)", title_justify="left")
    for header in ("device", "power", "energy", "band", "source"):
        table.add_column(header, justify="left" if header in ("device", "source") else "right")
    for d in devices:
        table.add_row(
            f"{d.device.name} ({d.device.uuid})" if d.device.name != d.device.uuid else d.device.uuid,
            readable(d.power_w, "power") if d.power_w is not None else MISSING,
            *_energy_and_band(d.figure.energy_j, d.figure.low_j, d.figure.high_j, d.samples),
            "LOST " + str(d.device.source) if d.lost else str(d.device.source),
        )
    if len(devices) > 1:
        powers = [d.power_w for d in devices if d.power_w is not None]
        energy_j, low_j, high_j = (
            sum(getattr(d.figure, f) for d in devices) for f in ("energy_j", "low_j", "high_j")
        )
        total = _energy_and_band(energy_j, low_j, high_j, min(d.samples for d in devices))
        table.add_row(
            "total", readable(sum(powers), "power") if powers else MISSING, *total, "", style="bold"
        )
    return table


def _energy_and_band(energy_j: float, low_j: float, high_j: float, samples: int) -> tuple[str, str]:
    """The energy and its band in one unit ("12.3 Wh", "11.9 - 12.8 Wh"); "-" before any reading."""
    if samples == 0:
        return MISSING, MISSING
    unit, size = unit_for(high_j, "energy")
    return f"{sig3(energy_j / size)} {unit}", f"{sig3(low_j / size)} - {sig3(high_j / size)} {unit}"
