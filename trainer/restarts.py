"""What a restart cost: the steps redone since the last checkpoint, read from the ledger.

The tracker records ``checkpoint`` events (step) when the trainer saves, and
``progress`` events (step, attempt, attempt_start_s) as it goes and at close.
On resume, the work between the checkpoint the job restarts from and the last
progress of the previous attempt was done twice: :func:`lost_work` finds that
window, and the tracker records it as a ``lost_work`` event, so the split of
the footprint counts its energy as lost work.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from wattlog.events import EventKind, Progress


@dataclass(frozen=True, slots=True)
class LostWork:
    """The work a restart redoes.

    Attributes:
        from_step: Step the job restarts from (its checkpoint).
        to_step: Last step the previous attempt reported.
        start_s: Unix time the previous attempt passed from_step (the checkpoint or its first step).
        end_s: Unix time of its last reported step.
    """

    from_step: int
    to_step: int
    start_s: float
    end_s: float

    @property
    def steps_redone(self) -> int:
        """Steps trained twice."""
        return max(0, self.to_step - self.from_step)

    def payload(self) -> dict[str, Any]:
        """JSON-able data for the ledger event."""
        return {
            "from_step": self.from_step,
            "to_step": self.to_step,
            "steps_redone": self.steps_redone,
            "start_s": self.start_s,
            "end_s": self.end_s,
        }


def last_attempt(events: Iterable[Any]) -> tuple[int, int, float, float] | None:
    """(attempt, last step, attempt start time, last step time) of the latest progress, or None."""
    last = None
    for event in events:
        if event.kind != EventKind.PROGRESS or event.step is None:
            continue
        if last is None or event.time_s >= last[3]:
            progress = Progress.from_json(event.payload or {}, event.time_s)
            start_s = progress.attempt_start_s if progress.attempt_start_s is not None else event.time_s
            last = (progress.attempt, int(event.step), float(start_s), float(event.time_s))
    return last


def lost_work(events: list[Any], resume_step: int | None = None) -> LostWork | None:
    """The window the previous attempt spent on steps the new attempt will redo.

    Args:
        events: The run's ledger events, in time order.
        resume_step: Step the job restarts from; None = the latest checkpoint (0 without one).

    Returns:
        None when there was no previous progress or nothing is redone.
    """
    last = last_attempt(events)
    if last is None:
        return None
    _, to_step, attempt_start_s, end_s = last
    checkpoints = [
        e for e in events if e.kind == EventKind.CHECKPOINT and e.step is not None and e.step <= to_step
    ]
    if resume_step is None:
        resume_step = max((int(e.step) for e in checkpoints), default=0)
    if resume_step >= to_step:
        return None
    saved = [e.time_s for e in checkpoints if e.step == resume_step and e.time_s >= attempt_start_s]
    start_s = max(saved) if saved else attempt_start_s
    return LostWork(from_step=resume_step, to_step=to_step, start_s=start_s, end_s=end_s)
