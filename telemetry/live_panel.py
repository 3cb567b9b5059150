"""`wattlog agent`'s live panel: power, energy and its band per device, redrawn while the agent measures.

Drawn only when the console is a terminal (rich Live, redrawn in place once a second, removed at
the end so the final table follows the start lines); a pipe or a log file gets the plain start and
end lines alone, never a stream of redraws. A device with no power reading shows "-", a lost one
"lost": nothing is shown as 0 that was not measured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from wattlog.telemetry.types import DeviceEnergy

MISSING = "-"


def _wh(joules: float) -> str:
    return f"{joules / 3600:,.4g} Wh"


def panel(devices: Sequence[DeviceEnergy]) -> Table:
    """One row per device: its name, kind and source, power now, energy so far and the energy's band."""
    table = Table(title="wattlog agent: measuring (Ctrl-C stops)", title_justify="left")
    for header in ("device", "kind", "source", "power now", "energy", "band"):
        table.add_column(header, justify="right" if header in ("power now", "energy", "band") else "left")
    for d in devices:
        power = "lost" if d.lost else (MISSING if d.power_w is None else f"{d.power_w:,.1f} W")
        band = f"{_wh(d.figure.low_j)} - {_wh(d.figure.high_j)}"
        table.add_row(
            d.device.name, str(d.device.kind), str(d.device.source), power, _wh(d.figure.energy_j), band
        )
    if not devices:
        table.add_row("no device measured yet", MISSING, MISSING, MISSING, MISSING, MISSING)
    return table


class LivePanel:
    """Redraws :func:`panel` of `snapshot()` on `console` while entered, when it is a terminal.

    Args:
        snapshot: The agent's per-device energy (Agent.snapshot).
        console: Where to draw; not a terminal: nothing is drawn.
        refresh_s: Seconds between redraws.
    """

    def __init__(
        self, snapshot: Callable[[], Sequence[DeviceEnergy]], console: Console, refresh_s: float = 1.0
    ) -> None:
        self._snapshot = snapshot
        self._console = console
        self._refresh_s = refresh_s
        self._live: Live | None = None

    def __enter__(self) -> LivePanel:
        if self._console.is_terminal:
            self._live = Live(
                console=self._console,
                get_renderable=lambda: panel(self._snapshot()),
                refresh_per_second=1.0 / self._refresh_s,
                transient=True,
            )
            self._live.start(refresh=True)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
