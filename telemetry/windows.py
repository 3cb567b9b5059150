"""Measurement windows: the energy of a named stretch of a run, edges exact to one counter update.

In the spirit of Zeus' ``begin_window``/``end_window``, but as a context manager
that nests and never synchronises the device unless asked::

    with agent.window("eval") as w:      # no NVML call and no device sync on this thread
        evaluate()
    w.energy_j                           # every device's energy between the two edges

Each edge takes every device's running totals (the counter's differences up to
its last update) plus the stretch from that update to the edge, which the
latest power reading fills in; the band adds [0, P_max] for that stretch. So a
window's counter energy is exact to one counter update (~100 ms of ~10-90 s).
The edge itself reads nothing: the sampler's latest reading is at most one
period old, and NVML, which can block for tens of seconds on a faulted GPU,
stays on the sampler's thread. Windows land in the sinks at the next flush
(``WindowSink``), so the ledger lists them (``wattlog windows RUN``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from wattlog.clock import Clock
from wattlog.records import EnergyInterval
from wattlog.telemetry.integrator import EdgeMark, Integrator

_WAIT_S = 5.0  # a window waits this long at most for the counter update after its end


@dataclass
class Window:
    """One window: open until its block ends, then its energy per device.

    Attributes:
        name: The window's name ("eval", "epoch-3").
        parent: The enclosing window's name on the same thread ("" at the top).
        start_s: Wall-clock start, Unix seconds.
        end_s: Wall-clock end (None while open).
        devices: Energy per device, once closed.
    """

    name: str
    parent: str
    start_s: float
    end_s: float | None = None
    devices: list[EnergyInterval] = field(default_factory=list)
    _marks: Mapping[str, EdgeMark] = field(default_factory=dict, repr=False)
    _t: tuple[float, float] = (0.0, 0.0)  # monotonic edges
    _edges: dict[str, list[float | None]] = field(default_factory=dict, repr=False)  # exact, per device
    _resolved: bool = False
    _owner: Windows | None = field(default=None, repr=False)

    @property
    def resolved(self) -> bool:
        """Whether both edges are exact to the counter (the update after each edge was read)."""
        if not self._resolved and self._owner is not None and self.end_s is not None:
            self._owner.resolve(self)
        return self._resolved

    @property
    def energy_j(self) -> float:
        """Energy of every device together, joules: a sum (0 while open)."""
        _ = self.resolved
        return sum(d.energy_j for d in self.devices)

    @property
    def low_j(self) -> float:
        """Lower end of the summed band, joules."""
        _ = self.resolved
        return sum(d.low_j for d in self.devices)

    @property
    def high_j(self) -> float:
        """Upper end of the summed band, joules."""
        _ = self.resolved
        return sum(d.high_j for d in self.devices)


class Windows:
    """Opens and closes windows on one integrator; closed ones wait here for the next flush.

    Args:
        integrator: Where the running totals live.
        clock: The agent's clock.
        host: The host label of every row.
    """

    def __init__(self, integrator: Integrator, clock: Clock, host: str) -> None:
        self._integrator = integrator
        self._clock = clock
        self._host = host
        self._lock = threading.Lock()
        self._opened: list[Window] = []
        self._closed: list[Window] = []
        self._open = threading.local()  # each thread nests its own windows
        # fixed at start, as the integrator's: a wall-clock step moves neither edge against the rows
        self._wall_offset_s = clock.wall() - clock.monotonic()

    def begin(self, name: str, sync: Callable[[], object] | None = None) -> Window:
        """Open a window now (after `sync()`, when given: e.g. torch.cuda.synchronize)."""
        if sync is not None:
            sync()
        stack: list[Window] = self._stack()
        now_s = self._clock.monotonic()
        window = Window(name, stack[-1].name if stack else "", self._wall(now_s), _owner=self)
        window._marks = self._integrator.mark(now_s)
        window._t = (now_s, now_s)
        stack.append(window)
        with self._lock:
            self._opened.append(window)
        return window

    def end(self, window: Window, sync: Callable[[], object] | None = None) -> Window:
        """Close `window` now: its energy per device, queued for the sinks; returns it."""
        if sync is not None:
            sync()
        now_s = self._clock.monotonic()
        marks = self._integrator.mark(now_s)
        stack = self._stack()
        if window in stack:
            stack.remove(window)
        window.end_s = self._wall(now_s)
        window._t = (window._t[0], now_s)
        window.devices = [
            EnergyInterval(self._host, uuid, window.start_s, window.end_s, figure, window.name, window.parent)
            for uuid, figure in self._integrator.window(window._marks, marks).items()
        ]
        with self._lock:
            self._opened.remove(window)
            self._closed.append(window)
        self.resolve(window)  # the start edge, at least
        return window

    def resolve(self, window: Window) -> bool:
        """Make each edge exact to the counter once the update after it is in; whether both are now.

        The start edge is resolved while the window is still open (at each flush), so a
        window longer than the integrator's update history resolves too.
        """
        t0, t1 = window._t
        closed = window.end_s is not None
        for uuid in window._marks:
            if not self._integrator.uses_counter(uuid):
                continue  # power readings only: the edges stay as the latest power gave them
            edges = window._edges.setdefault(uuid, [None, None])
            if edges[0] is None:
                edges[0] = self._integrator.energy_at(uuid, t0)
            if closed and edges[1] is None:
                edges[1] = self._integrator.energy_at(uuid, t1)
        if not closed or any(None in edges for edges in window._edges.values()):
            return False
        rows = []
        for row in window.devices:
            start_j, end_j = window._edges.get(row.device, (None, None))
            if start_j is not None and end_j is not None:
                exact_j = end_j - start_j
                shift = exact_j - row.energy_j  # the band moves with the figure; its width stays
                figure = replace(
                    row.figure, energy_j=exact_j, low_j=row.low_j + shift, high_j=row.high_j + shift
                )
                row = replace(row, figure=figure)
            rows.append(row)
        window.devices = rows
        window._resolved = True
        return True

    def take(self, *, final: bool = False) -> list[EnergyInterval]:
        """The rows of closed windows whose edges are resolved (all of them when `final`), for the sinks.

        A window whose device stopped updating stays provisional (edges from the latest
        power reading) and goes out once it is older than `_WAIT_S`, or at the final take.
        """
        now_s = self._clock.monotonic()
        with self._lock:
            closed, self._closed = self._closed, []
            still_open = list(self._opened)
        for window in still_open:
            self.resolve(window)
        ready: list[EnergyInterval] = []
        for window in closed:
            if window.resolved or final or now_s - window._t[1] > _WAIT_S:
                ready.extend(window.devices)
            else:
                with self._lock:
                    self._closed.append(window)
        return ready

    def _stack(self) -> list[Window]:
        stack: list[Window] | None = getattr(self._open, "stack", None)
        if stack is None:
            stack = self._open.stack = []
        return stack

    def _wall(self, monotonic_s: float) -> float:
        return monotonic_s + self._wall_offset_s
