"""Where a run's energy went: productive training, lost work, health checks, the rest.

Energy rows (one per device per flush interval) are cut at the boundaries of
the windows the tracker records as events, assuming constant power within a
row, and each piece goes to the first use whose windows contain it:

- health_check: ``health_check`` events (payload start_s, end_s);
- lost_work: ``lost_work`` events, the steps a restart redid (payload start_s, end_s);
- productive: ``progress`` events, first to last step of each attempt
  (payload attempt, attempt_start_s; the event time is the latest step);
- command busy / command idle: the time of ``activity`` events (what `wattlog run` measured of
  its command: CPU time over wall time, how often it was runnable, and the GPUs' utilisation
  where their sensors give it), divided by the measured busy fraction (the highest of them), at
  constant power: a command that kept a CPU or GPU busy all along is all busy (one was once
  reported "idle 100 %");
- other: the rest. It is never called idle, since nothing here measured idleness: in a run
  that reported steps it is the time outside them (start-up, evaluation, checkpoints,
  shutdown); in a run whose command's activity was measured it is wattlog's own start and
  close around the command; in a run that reported neither, the command, busy or waiting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from wattlog.accounting.it_energy import energy_label
from wattlog.accounting.ledger import Ledger
from wattlog.accounting.ledger.views import EventInfo
from wattlog.events import Activity, EventKind, Progress
from wattlog.events import Window as EventWindow

Window = tuple[float, float]


class Use(StrEnum):
    """What energy was spent on, in order of precedence."""

    HEALTH_CHECK = EventKind.HEALTH_CHECK.value
    LOST_WORK = EventKind.LOST_WORK.value
    PRODUCTIVE = "productive"
    COMMAND_BUSY = "command_busy"
    """The command's time, by the fraction of it with a CPU busy (its measured CPU time)."""
    COMMAND_IDLE = "command_idle"
    """The rest of the command's time: asleep, neither on a CPU nor waiting for one, its GPUs unused."""
    OTHER = "other"
    """Outside the steps, or the whole command when it reported none (see the module docstring)."""


_LABELS = {
    Use.PRODUCTIVE: ("productive training", "productive"),
    Use.LOST_WORK: ("lost work (steps redone after restarts)", "lost work"),
    Use.HEALTH_CHECK: ("health checks", "health checks"),
    Use.COMMAND_IDLE: ("the command, idle (asleep: no CPU or GPU use measured)", "command idle"),
}
COMMAND_USES = (Use.COMMAND_BUSY, Use.COMMAND_IDLE)
"""The uses a split has only when the command's activity was measured."""
"""Each use's label in the run report and its short form in the Streamlit report."""


@dataclass(frozen=True, slots=True)
class EnergySplit:
    """A run's IT energy by use, joules, with the source label of the energy.

    Attributes:
        joules: Use -> joules (every use present, 0 when none; the command's busy and idle
            only when its activity was measured).
        source: counter, sampled, estimated, simulated, or a "+" mix.
        steps: Whether the run reported training steps (else `other` is the whole command).
        activity: The command's CPU seconds and wall seconds (None: not measured).
        gpu_busy: The GPUs' mean utilisation meanwhile, 0..1 (None: no GPU gave one).
        runnable: How often a process of the command was runnable, 0..1 (None: not sampled).
    """

    joules: dict[Use, float]
    source: str
    steps: bool = False
    activity: tuple[float, float] | None = None
    gpu_busy: float | None = None
    runnable: float | None = None

    def label(self, use: Use, *, short: bool = False) -> str:
        """What a use is called in this run: `other` reads as what it was, never as idle."""
        if use is Use.COMMAND_BUSY:
            if short:
                return "command busy"
            cpu_s, wall_s = self.activity or (0.0, 0.0)
            runnable = f"; runnable {self.runnable:.0%}" if self.runnable is not None else ""
            gpu = f"; GPU utilisation {self.gpu_busy:.0%}" if self.gpu_busy is not None else ""
            return f"the command, busy (CPU time {cpu_s:.1f} s in {wall_s:.1f} s{runnable}{gpu})"
        if use is not Use.OTHER:
            return _LABELS[use][1 if short else 0]
        if self.activity is not None and not self.steps:
            return "wattlog" if short else "outside the command (wattlog's start and close)"
        if self.steps:
            long = "outside training steps (start-up, evaluation, checkpoints, shutdown)"
            return "outside steps" if short else long
        long = "the command (it reported no steps: busy or waiting, not told apart)"
        return "the command" if short else long

    @property
    def total_j(self) -> float:
        """All uses together."""
        return sum(self.joules.values())

    def share(self, use: Use) -> float:
        """Fraction of the total spent on `use` (0 when nothing was measured)."""
        total = self.total_j
        return self.joules[use] / total if total > 0 else 0.0


def activities(events: Iterable[EventInfo]) -> list[Activity]:
    """What `wattlog run` measured of its command(s), from a run's ledger events."""
    found = (Activity.from_json(e.payload) for e in events if e.kind == EventKind.ACTIVITY)
    return [a for a in found if a is not None and a.end_s > a.start_s]


def windows(events: Iterable[EventInfo]) -> dict[Use, list[Window]]:
    """The windows of each use from a run's ledger events (the command's under COMMAND_BUSY)."""
    found: dict[Use, list[Window]] = {use: [] for use in Use}
    attempts: dict[Any, Window] = {}
    for event in events:
        payload: Mapping[str, Any] = event.payload
        if event.kind == EventKind.ACTIVITY:
            activity = Activity.from_json(payload)
            if activity is not None:
                found[Use.COMMAND_BUSY].append((activity.start_s, activity.end_s))
        elif event.kind in (EventKind.HEALTH_CHECK, EventKind.LOST_WORK):
            window = EventWindow.from_json(payload)
            if window is not None:
                found[Use(event.kind)].append((window.start_s, window.end_s))
        elif event.kind == EventKind.PROGRESS and "attempt_start_s" in payload:
            progress = Progress.from_json(payload, event.time_s)
            first_s = progress.attempt_start_s if progress.attempt_start_s is not None else event.time_s
            key = (progress.attempt, first_s)
            start, end = attempts.get(key, (first_s, first_s))
            attempts[key] = (start, max(end, float(event.time_s)))
    found[Use.PRODUCTIVE] = list(attempts.values())
    return found


def split_row(
    start_s: float, end_s: float, energy_j: float, by_use: dict[Use, list[Window]]
) -> dict[Use, float]:
    """Divide one row's energy among the uses by time, at constant power."""
    out = dict.fromkeys(Use, 0.0)
    if end_s <= start_s:
        out[_use_at(start_s, by_use)] += energy_j
        return out
    cuts = {start_s, end_s}
    for spans in by_use.values():
        for a, b in spans:
            cuts.update(t for t in (a, b) if start_s < t < end_s)
    points = sorted(cuts)
    power_w = energy_j / (end_s - start_s)
    for a, b in zip(points, points[1:], strict=False):
        out[_use_at((a + b) / 2, by_use)] += power_w * (b - a)
    return out


def _use_at(t_s: float, by_use: dict[Use, list[Window]]) -> Use:
    for use in (Use.HEALTH_CHECK, Use.LOST_WORK, Use.PRODUCTIVE, Use.COMMAND_BUSY):
        if any(a <= t_s <= b for a, b in by_use.get(use, ())):
            return use
    return Use.OTHER


def energy_split(ledger: Ledger, run: int | str) -> EnergySplit:
    """Split a run's recorded energy by use (see the module docstring)."""
    run_id = ledger.get_run(run).id
    events = ledger.events(run_id)
    by_use = windows(events)
    rows = ledger.energy_rows(run_id)
    totals = dict.fromkeys(Use, 0.0)
    for row in rows:
        for use, joules in split_row(row.start_s, row.end_s, row.energy_j, by_use).items():
            totals[use] += joules
    source = energy_label({row.source for row in rows}) if rows else "none"
    measured = activities(events)
    if not measured:
        for use in COMMAND_USES:
            del totals[use]
        return EnergySplit(totals, source, steps=bool(by_use[Use.PRODUCTIVE]))
    cpu_s = sum(a.cpu_s for a in measured)
    wall_s = sum(a.end_s - a.start_s for a in measured)
    # the command's energy by the busy share of its time (at constant power: a busy CPU draws more,
    # so the busy part is if anything too small, never a busy command called idle)
    busy = sum(a.busy * (a.end_s - a.start_s) for a in measured) / wall_s
    command_j = totals[Use.COMMAND_BUSY]
    totals[Use.COMMAND_BUSY], totals[Use.COMMAND_IDLE] = command_j * busy, command_j * (1 - busy)
    steps = bool(by_use[Use.PRODUCTIVE])
    gpu_busy, runnable = _mean(measured, "gpu_busy"), _mean(measured, "runnable")
    return EnergySplit(totals, source, steps, (cpu_s, wall_s), gpu_busy=gpu_busy, runnable=runnable)


def _mean(measured: list[Activity], name: str) -> float | None:
    """The time-weighted mean of an optional Activity fraction over the activities that have it."""
    known = [(value, a.end_s - a.start_s) for a in measured if (value := getattr(a, name)) is not None]
    seconds = sum(s for _, s in known)
    return sum(v * s for v, s in known) / seconds if known and seconds > 0 else None
