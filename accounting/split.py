"""Where a run's energy went: productive training, lost work, health checks, the rest.

Energy rows (one per device per flush interval) are cut at the boundaries of
the windows the tracker records as events, assuming constant power within a
row, and each piece goes to the first use whose windows contain it:

- health_check: ``health_check`` events (payload start_s, end_s);
- lost_work: ``lost_work`` events, the steps a restart redid (payload start_s, end_s);
- productive: ``progress`` events, first to last step of each attempt
  (payload attempt, attempt_start_s; the event time is the latest step);
- other: the rest. It is never called idle, since nothing here measured idleness: in a run
  that reported steps it is the time outside them (start-up, evaluation, checkpoints,
  shutdown); in a run that reported none (``wattlog run -- CMD``) it is the command itself,
  busy or waiting, which the ledger cannot tell apart (a CPU-bound command was once
  reported "idle 100 %").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from wattlog.accounting.it_energy import energy_label
from wattlog.accounting.ledger import Ledger
from wattlog.accounting.ledger.views import EventInfo
from wattlog.events import EventKind, Progress
from wattlog.events import Window as EventWindow

Window = tuple[float, float]


class Use(StrEnum):
    """What energy was spent on, in order of precedence."""

    HEALTH_CHECK = EventKind.HEALTH_CHECK.value
    LOST_WORK = EventKind.LOST_WORK.value
    PRODUCTIVE = "productive"
    OTHER = "other"
    """Outside the steps, or the whole command when it reported none (see the module docstring)."""


_LABELS = {
    Use.PRODUCTIVE: ("productive training", "productive"),
    Use.LOST_WORK: ("lost work (steps redone after restarts)", "lost work"),
    Use.HEALTH_CHECK: ("health checks", "health checks"),
}
"""Each use's label in the run report and its short form in the Streamlit report."""


@dataclass(frozen=True, slots=True)
class EnergySplit:
    """A run's IT energy by use, joules, with the source label of the energy.

    Attributes:
        joules: Use -> joules (every use present, 0 when none).
        source: counter, sampled, estimated, simulated, or a "+" mix.
        steps: Whether the run reported training steps (else `other` is the whole command).
    """

    joules: dict[Use, float]
    source: str
    steps: bool = False

    def label(self, use: Use, *, short: bool = False) -> str:
        """What a use is called in this run: `other` reads as what it was, never as idle."""
        if use is not Use.OTHER:
            return _LABELS[use][1 if short else 0]
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


def windows(events: Iterable[EventInfo]) -> dict[Use, list[Window]]:
    """The windows of each use from a run's ledger events."""
    found: dict[Use, list[Window]] = {use: [] for use in Use}
    attempts: dict[Any, Window] = {}
    for event in events:
        payload: Mapping[str, Any] = event.payload
        if event.kind in (EventKind.HEALTH_CHECK, EventKind.LOST_WORK):
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
    for use in (Use.HEALTH_CHECK, Use.LOST_WORK, Use.PRODUCTIVE):
        if any(a <= t_s <= b for a, b in by_use.get(use, ())):
            return use
    return Use.OTHER


def energy_split(ledger: Ledger, run: int | str) -> EnergySplit:
    """Split a run's recorded energy by use (see the module docstring)."""
    run_id = ledger.get_run(run).id
    by_use = windows(ledger.events(run_id))
    rows = ledger.energy_rows(run_id)
    totals = dict.fromkeys(Use, 0.0)
    for row in rows:
        for use, joules in split_row(row.start_s, row.end_s, row.energy_j, by_use).items():
            totals[use] += joules
    source = energy_label({row.source for row in rows}) if rows else "none"
    return EnergySplit(totals, source, steps=bool(by_use[Use.PRODUCTIVE]))
