"""The bookkeeping side of the Tracker: flushed steps become exports, callback calls, events and progress.

Runs on the bookkeeping thread (and once more at close): never on the
training thread, so nothing here can slow a step. Every failure is one
warning and the run goes on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from wattlog.events import DetectionPayload, EventCategory, EventKind, Progress
from wattlog.trainer.callback import Callback
from wattlog.trainer.callbacks import SpeedFigures
from wattlog.trainer.detectors import Detection
from wattlog.trainer.exporter import TrainingState
from wattlog.trainer.metrics import StepRecord
from wattlog.trainer.session import RunSession

Warn = Callable[[str, str], None]


class Bookkeeper:
    """Handles each flushed batch of steps for one tracker.

    Args:
        session: The run (its recorder writes the events).
        callbacks: The tracker's callbacks, highest priority first.
        state: The training figures the Prometheus collector serves.
        hooks: Called with every detection and restart (alert webhooks).
        speed: The latest speed figures (None before any).
        progress_every_s: Seconds between progress events.
        warn: warn_once(key, message) of the tracker.
    """

    def __init__(
        self,
        session: RunSession,
        callbacks: Sequence[Callback],
        state: TrainingState,
        hooks: list[Callable[[Detection], None]],
        speed: Callable[[], SpeedFigures | None],
        progress_every_s: float,
        warn: Warn,
    ) -> None:
        self._session = session
        self._callbacks = callbacks
        self._state = state
        self.hooks = hooks
        self._speed = speed
        self._progress_every_s = progress_every_s
        self._warn = warn
        self.latest: StepRecord | None = None
        self.attempt_start_s: float | None = None
        self._last_progress_s = -math.inf
        self._last_progress_step: int | None = None

    def handle(self, records: list[StepRecord]) -> None:
        """Export a flushed batch, run the callbacks on it, record progress when due."""
        self._state.observe(records)
        self.latest = records[-1]
        for callback in self._callbacks:
            self.safely(f"{type(callback).__name__}.log_metrics", callback.log_metrics, records)
        self.record_progress()

    def record_progress(self, force: bool = False) -> None:
        """Store a progress event (rank 0; every progress_every_s seconds, or now with `force`)."""
        recorder, latest = self._session.recorder, self.latest
        if self._session.config.rank != 0 or recorder is None or latest is None:
            return
        now_s = self._session.clock.monotonic()
        if not force and now_s - self._last_progress_s < self._progress_every_s:
            return
        if latest.step == self._last_progress_step:
            return
        self._last_progress_s, self._last_progress_step = now_s, latest.step
        speed = self._speed()
        progress = Progress(
            attempt=self._session.attempt,
            attempt_start_s=self.attempt_start_s,
            tokens_total=self._state.snapshot().tokens_total,
            tokens_per_s=speed.tokens_per_s if speed else None,
            tokens_per_j=speed.tokens_per_j if speed else None,
            mfu=speed.mfu if speed else None,
        )
        self.safely("record progress", recorder.progress, latest.step, latest.wall_s, progress)

    def detected(self, detection: Detection) -> None:
        """An instability: one log line, a ledger event, the counter and the hooks."""
        self._warn(f"detection-{detection.kind}-{detection.step}", detection.message)
        recorder = self._session.recorder
        if recorder is not None:
            rank = self._session.config.rank
            payload = DetectionPayload(detection.value, detection.threshold, detection.message, rank)
            self.safely(
                "record event",
                recorder.event,
                detection.kind,
                step=detection.step,
                category=EventCategory.INSTABILITY,
                payload=payload.to_json(),
            )
        self.emit(detection)

    def restarted(self) -> None:
        """Report the restart of a resumed run (its lost work) to the log, the counter and the hooks."""
        lost, session = self._session.lost, self._session
        if lost is None:
            return
        message = (
            f"restart {session.attempt} of {session.run!r}: {lost.steps_redone} steps redone since the "
            f"checkpoint at step {lost.from_step} ({session.lost_energy_j:.0f} J of lost work)"
        )
        self._warn("restart", message)
        self.emit(Detection(EventKind.RESTART, lost.from_step, float(lost.steps_redone), 0.0, message))

    def emit(self, detection: Detection) -> None:
        """Count the event for Prometheus and call every hook."""
        self._state.event(detection.kind)
        for hook in self.hooks:
            self.safely("event hook", hook, detection)

    def safely(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `fn`; a failure is one warning (once per `what`), never an exception."""
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            self._warn(f"safely-{what}", f"{what} failed: {error}")
            return None
