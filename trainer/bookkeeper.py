"""The bookkeeping side of the Tracker: flushed steps become exports, callback calls, events and progress.

Runs on the bookkeeping thread (and once more at close): never on the
training thread, so nothing here can slow a step. Every failure is one
warning and the run goes on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from wattlog.accounting.ledger.jobs import RankReport
from wattlog.errors import WattlogError
from wattlog.events import DetectionPayload, EventCategory, EventKind, Progress
from wattlog.trainer.callback import Callback
from wattlog.trainer.callbacks import SpeedFigures
from wattlog.trainer.detectors import Detection
from wattlog.trainer.exporter import TrainingState
from wattlog.trainer.metrics import StepRecord
from wattlog.trainer.recorder import RunRecorder
from wattlog.trainer.session import RunSession

if TYPE_CHECKING:  # torch is imported only by a tracker that runs the check
    from wattlog.trainer.health import HealthResult

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
        flops_per_token: Training FLOPs per token, reported with this rank's tokens (job MFU).
        peak_flops: Peak FLOP/s of all ranks together, likewise.
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
        *,
        flops_per_token: float | None = None,
        peak_flops: float | None = None,
    ) -> None:
        self._session = session
        self._callbacks = callbacks
        self._state = state
        self.hooks = hooks
        self._speed = speed
        self._progress_every_s = progress_every_s
        self._warn = warn
        self._flops = (flops_per_token, peak_flops)
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
        """Report this rank's tokens and, on rank 0, store a progress event with the job's figures.

        Every progress_every_s seconds, or now with `force`. With several ranks, one rank's tokens
        over its node's energy is 1/ranks too small: the job's tokens per joule and MFU come from
        every rank's tokens in the ledger (wattlog.accounting.publishing.job_speed) and replace that rank's.
        """
        recorder, latest = self._session.recorder, self.latest
        if recorder is None or latest is None:
            return
        now_s = self._session.clock.monotonic()
        if not force and now_s - self._last_progress_s < self._progress_every_s:
            return
        if latest.step == self._last_progress_step:
            return
        self._last_progress_s, self._last_progress_step = now_s, latest.step
        tokens_total = self._state.snapshot().tokens_total
        self.safely("record rank progress", self._report_rank, recorder, latest.step, tokens_total)
        if self._session.config.rank != 0:
            return
        speed = self._speed()
        progress = Progress(
            attempt=self._session.attempt,
            attempt_start_s=self.attempt_start_s,
            tokens_total=tokens_total,
            tokens_per_s=speed.tokens_per_s if speed else None,
            tokens_per_j=speed.tokens_per_j if speed else None,
            mfu=speed.mfu if speed else None,
        )
        job = self.safely("read the job's speed", recorder.job_speed)
        if job is not None:
            progress = replace(
                progress,
                tokens_per_j=job.tokens_per_j,
                mfu=job.mfu,
                job_ranks=job.ranks,
                job_tokens=job.tokens,
                job_tokens_per_s=job.tokens_per_s,
            )
            self._state.job(job.tokens_per_j, job.mfu)
        self.safely("record progress", recorder.progress, latest.step, latest.wall_s, progress)

    def _report_rank(self, recorder: RunRecorder, step: int, tokens_total: float) -> None:
        session = self._session
        start_s = self.attempt_start_s or session.clock.wall()
        flops_per_token, peak_flops = self._flops
        report = RankReport(
            session.host, session.config.local_rank, tokens_total, step, start_s, flops_per_token, peak_flops
        )
        recorder.report_rank(report)

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

    def health_checked(self, result: HealthResult) -> None:
        """Record the pre-flight health check as an event.

        Raises:
            WattlogError: The check failed (training must not start).
        """
        recorder = self._session.recorder
        assert recorder is not None
        payload = {**result.payload(), "rank": self._session.config.rank}
        recorder.event(
            EventKind.HEALTH_CHECK, time_s=result.end_s, category=EventCategory.HEALTH_CHECK, payload=payload
        )
        if not result.ok:
            raise WattlogError(f"health check failed, not training: {result.summary()}")

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
