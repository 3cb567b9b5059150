"""The Tracker: what a training loop calls to measure and record its run.

::

    with Tracker(run="gpt-small-1", site="jupiter", model="gpt-small") as t:
        for batch in data:
            loss = ...
            t.step(loss=loss, tokens=batch.numel(), grad_norm=norm)

The run itself (ledger, agent, joined agents, start and close with a status)
is a :class:`~wattlog.trainer.session.RunSession`; the Tracker adds the hot
path and the callbacks. ``step()`` takes tensors as they are, keeps them on
the device and never syncs; every ``log_every`` steps they are moved in one
non-blocking copy and the bookkeeping thread exports them, runs the callbacks
and detectors and records progress. Leaving the block ends the run (finished,
failed, killed, or preempted when a SIGTERM stopped it).

Nothing the tracker does crashes training: a bad value given to ``step()`` is
one warning line and skipped. Configuration problems (an unknown site, a
ledger that cannot be opened) raise a typed error from ``start()``, before
any training.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import torch

from wattlog.accounting.ledger import Ledger, Status
from wattlog.clock import Clock
from wattlog.errors import WattlogError
from wattlog.events import EventCategory, EventKind
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.types import DeviceEnergy
from wattlog.trainer.bookkeeper import Bookkeeper
from wattlog.trainer.callback import Callback, CallbackContext
from wattlog.trainer.callbacks import GCCallback, SpeedCallback, SpeedFigures, StabilityCallback
from wattlog.trainer.detectors import Detection
from wattlog.trainer.exporter import TrainingCollector, TrainingState
from wattlog.trainer.metrics import BookkeepingThread, DeviceMetricBuffer, StepRecord
from wattlog.trainer.recorder import RunRecorder
from wattlog.trainer.restarts import LostWork
from wattlog.trainer.session import (
    ENV_RESUME,
    ENV_RUN_ID,
    RunSession,
    SessionConfig,
    SessionSummary,
    status_for_error,
)
from wattlog.trainer.step_values import StepValues
from wattlog.trainer.tracker_config import TrackerConfig

log = logging.getLogger(__name__)

__all__ = ["ENV_RESUME", "ENV_RUN_ID", "SessionConfig", "Tracker", "TrackerConfig"]


class Tracker:
    """Measure a training run, record it in the ledger and export it; use as a context manager.

    The keywords are those of :class:`SessionConfig` (the run: run, site, model, project, role, db,
    resume, resume_step, agent, agent_config, rank, local_rank, sample_nodes, config, join_timeout_s,
    phase, stage, scale_group, device_model, gpu_hours, requests) and of :class:`TrackerConfig`
    (log_every, gc_every, flops_per_token, peak_flops, health_check, device, progress_every_s),
    documented there and validated once; unset names, ranks and the job identity come from the
    environment ($WATTLOG_RUN_ID, $WATTLOG_RESUME, $RANK else $SLURM_PROCID, $LOCAL_RANK else
    $SLURM_LOCALID, $WATTLOG_SAMPLE_NODES, SLURM's and torchrun's job variables).
    :meth:`from_config` takes a built config. The other arguments are what the tracker works with:

    Args:
        watch: Module whose output norm is sampled (final layer), for the activation-growth detector.
        callbacks: Extra callbacks (a GC, speed or stability callback given here replaces the default).
            They are used as given: the tracker never changes their fields.
        on_event: Called with every detection and restart (alerting webhooks hook in here).
        sensors: Sensors for the agent; None discovers the machine's.
        clock: Time source.
        environ: Environment (default: os.environ).
    """

    def __init__(
        self,
        run: str | None = None,
        *,
        site: str = "",
        model: str = "",
        project: str = "default",
        role: str = "final",
        log_every: int = 10,
        db: str | None = None,
        resume: bool | None = None,
        resume_step: int | None = None,
        gc_every: int | None = 1000,
        flops_per_token: float | None = None,
        peak_flops: float | None = None,
        watch: torch.nn.Module | None = None,
        health_check: bool = False,
        device: str = "cpu",
        callbacks: Sequence[Callback] = (),
        on_event: Sequence[Callable[[Detection], None]] = (),
        agent: bool | None = None,
        agent_config: AgentConfig | None = None,
        sensors: Sequence[Sensor] | None = None,
        rank: int | None = None,
        local_rank: int | None = None,
        config: Mapping[str, Any] | None = None,
        progress_every_s: float = 30.0,
        join_timeout_s: float = 60.0,
        sample_nodes: int | None = None,
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
        phase: str = "",
        stage: str = "",
        scale_group: str = "",
        device_model: str = "",
        gpu_hours: float | None = None,
        requests: int | None = None,
    ) -> None:
        given = dict(locals())  # every keyword but the objects below is a config field
        for name in ("self", "watch", "callbacks", "on_event", "sensors", "clock", "environ"):
            del given[name]
        settings = TrackerConfig.from_kwargs(environ=environ, **given)
        self._setup(settings, callbacks, on_event, watch, sensors, clock, environ)

    @classmethod
    def from_config(
        cls,
        config: TrackerConfig,
        *,
        callbacks: Sequence[Callback] = (),
        on_event: Sequence[Callable[[Detection], None]] = (),
        watch: torch.nn.Module | None = None,
        sensors: Sequence[Sensor] | None = None,
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Tracker:
        """A tracker from a validated :class:`TrackerConfig` and the objects it works with."""
        tracker = cls.__new__(cls)
        tracker._setup(config, callbacks, on_event, watch, sensors, clock, environ)
        return tracker

    def _setup(
        self,
        config: TrackerConfig,
        callbacks: Sequence[Callback],
        on_event: Sequence[Callable[[Detection], None]],
        watch: torch.nn.Module | None,
        sensors: Sequence[Sensor] | None,
        clock: Clock | None,
        environ: Mapping[str, str] | None,
    ) -> None:
        self.settings = config
        self._state = TrainingState()
        s = config.session
        self._bookkeeping = BookkeepingThread()
        self.session = RunSession(
            s,
            sensors=sensors,
            collectors=[
                TrainingCollector(self._state, s.run, s.rank, self._bookkeeping, host=s.agent_settings.host)
            ],
            clock=clock,
            environ=environ,
        )
        self.clock: Clock = self.session.clock
        self._watch = watch
        self._buffer = DeviceMetricBuffer(config.log_every)
        self._values = StepValues(log)
        self._callbacks = _compose(callbacks, config)
        self._books = Bookkeeper(
            self.session,
            self._callbacks,
            self._state,
            list(on_event),
            lambda: self.speed,
            config.progress_every_s,
            self._values.warn_once,
            flops_per_token=config.flops_per_token,
            peak_flops=config.peak_flops,
        )
        self._safely = self._books.safely
        self._extra: dict[str, torch.Tensor | float] = {}
        self._step = 0
        self._started = False
        self.health: Any = None
        self.status: Status | None = None
        self.summary: SessionSummary | None = None

    # the run's settings and parts, as the keyword constructor's attributes were

    @property
    def run(self) -> str:
        """The run's name."""
        return self.session.config.run

    @property
    def site(self) -> str:
        """The run's site as given."""
        return self.session.config.site

    @property
    def model(self) -> str:
        """What is trained."""
        return self.session.config.model

    @property
    def resume(self) -> bool:
        """Whether this continues an earlier run of that name."""
        return self.session.config.resume

    @property
    def rank(self) -> int:
        """Global rank of this process."""
        return self.session.config.rank

    @property
    def local_rank(self) -> int:
        """Rank within the node."""
        return self.session.config.local_rank

    @property
    def owns_agent(self) -> bool:
        """Whether this process runs the node's agent."""
        return self.session.config.owns_agent

    @property
    def ledger(self) -> Ledger | None:
        """The ledger (None before start())."""
        return self.session.ledger

    @property
    def recorder(self) -> RunRecorder | None:
        """The run's ledger writer (None before start())."""
        return self.session.recorder

    @property
    def run_id(self) -> int | None:
        """The run's id in the ledger (None before start())."""
        return self.session.run_id

    @property
    def agent(self) -> Agent | None:
        """This process's agent (None on ranks that do not own it)."""
        return self.session.agent

    @property
    def lost(self) -> LostWork | None:
        """The work a resume redoes (None if none)."""
        return self.session.lost

    # callbacks ---------------------------------------------------------------

    @property
    def callbacks(self) -> list[Callback]:
        """The callbacks, highest priority first."""
        return list(self._callbacks)

    def callback(self, kind: type[Callback]) -> Any:
        """The first callback of type `kind` (e.g. SpeedCallback), or None."""
        return next((c for c in self._callbacks if isinstance(c, kind)), None)

    def _context(self) -> CallbackContext:
        # With several ranks, one rank's tokens over its node's energy is 1/ranks too small: the
        # job's tokens per joule comes from every rank's tokens in the ledger (see Bookkeeper).
        multi_rank = self.session.config.world_size > 1
        return CallbackContext(
            run=self.run,
            rank=self.rank,
            clock=self.clock,
            add_metric=self.add_metric,
            energy_j=(lambda: None) if multi_rank else self.energy_j,
            detected=self._books.detected,
            speed=self._state.speed,
            watch=self._watch,
        )

    # life cycle ----------------------------------------------------------

    def start(self) -> Tracker:
        """Register the run, start the agent (through the session), the health check and bookkeeping.

        Raises:
            ConfigError: Unknown site or role.
            LedgerError: The ledger cannot be opened, or the run exists and resume is off.
            WattlogError: The agent cannot start, or the health check failed.
        """
        if self._started:
            raise WattlogError("the tracker is already started")
        self.session.start()
        self._step = self.session.start_step
        try:
            self._books.restarted()
            if self.settings.health_check:
                self._run_health_check()
        except BaseException:
            self.session.close(Status.FAILED)
            for callback in self._callbacks:
                self._safely(f"{type(callback).__name__}.close", callback.close)
            raise
        self._bookkeeping.start()
        self._started = True
        context = self._context()
        for callback in self._callbacks:
            self._safely(f"{type(callback).__name__}.pre_train", callback.pre_train, context)
        return self

    @property
    def unwritten_rows(self) -> int:
        """Energy rows this run measured that are not in the ledger (spooled or lost); 0 when complete."""
        return self.session.unwritten_rows

    def _run_health_check(self) -> None:
        from wattlog.trainer.health import health_check

        assert self.recorder is not None
        result = self.health = health_check(self.settings.device)
        self.recorder.event(
            EventKind.HEALTH_CHECK,
            time_s=result.end_s,
            category=EventCategory.HEALTH_CHECK,
            payload={**result.payload(), "rank": self.rank},
        )
        if not result.ok:
            raise WattlogError(f"health check failed, not training: {result.summary()}")

    def close(self, error: BaseException | None = None) -> None:
        """Flush the last steps, record progress, end the run through the session; never raises.

        Args:
            error: What ended the training body, if it raised: the run is then failed, killed
                (KeyboardInterrupt) or preempted (a SIGTERM's StopRequested).
        """
        if not self._started:
            return
        self._started = False
        last = self._buffer.flush()
        self._bookkeeping.close()
        if last is not None:  # handled here, so a full queue cannot drop the final steps
            self._safely("final bookkeeping", lambda: self._books.handle(last.resolve()))
        if error is not None:
            for callback in self._callbacks:
                self._safely(f"{type(callback).__name__}.on_error", callback.on_error, error)
        self._books.record_progress(force=True)
        self.status = status_for_error(error)
        self.summary = self.session.close(self.status)
        for callback in self._callbacks:
            self._safely(f"{type(callback).__name__}.close", callback.close)

    def __enter__(self) -> Tracker:
        return self if self._started else self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(exc)

    # the hot path --------------------------------------------------------

    def step(
        self,
        loss: Any = None,
        tokens: Any = None,
        grad_norm: Any = None,
        loss_scale: Any = None,
        *,
        step: int | None = None,
        **extra: Any,
    ) -> None:
        """Report one training step; values may be device tensors (never synced here) or numbers.

        Args:
            loss: Training loss (0-d tensor or number).
            tokens: Tokens in this step (all ranks' count is the sum of each rank's).
            grad_norm: Gradient norm.
            loss_scale: Dynamic loss scale (mixed precision).
            step: Step number; None = the previous one plus one.
            **extra: More named metrics.
        """
        try:
            if not self._started:
                self._values.warn_once(
                    "not-started", "Tracker.step() called outside `with Tracker(...)`: ignored"
                )
                return
            self._step = self._step + 1 if step is None else int(step)
            for callback in self._callbacks:
                callback.pre_step(self._step)
            metrics, self._extra = self._extra, {}
            given = dict(loss=loss, tokens=tokens, grad_norm=grad_norm, loss_scale=loss_scale, **extra)
            metrics.update(self._values.checked(given, self._step))
            now_s = self.clock.wall()
            if self._books.attempt_start_s is None:
                self._books.attempt_start_s = now_s
            due = self._buffer.add(self._step, now_s, metrics)
            for callback in self._callbacks:
                callback.post_step(self._step)
            if due:
                self._flush()
        except Exception as error:  # the tracker must never stop training
            self._values.warn_once(f"step-{type(error).__name__}", f"Tracker.step() skipped a step: {error}")

    def add_metric(self, name: str, value: torch.Tensor | float) -> None:
        """Attach a metric to the next step reported (callbacks' forward hooks use this)."""
        self._extra[name] = value

    def _flush(self) -> None:
        batch = self._buffer.flush()
        if batch is not None:
            self._bookkeeping.submit(lambda: self._books.handle(batch.resolve()))

    # other calls -----------------------------------------------------------

    def checkpoint(self, step: int | None = None) -> None:
        """Record that the trainer saved a checkpoint at `step` (default: the latest step).

        A restart that resumes from it counts the steps after it as redone.
        """
        if self.recorder is None or self.rank != 0:
            return
        at = self._step if step is None else step
        self._safely(
            "record checkpoint",
            self.recorder.event,
            EventKind.CHECKPOINT,
            step=at,
            category=EventCategory.PRODUCTIVE,
        )

    def add_hook(self, hook: Callable[[Detection], None]) -> None:
        """Call `hook` with every later detection and restart."""
        self._books.hooks.append(hook)

    def drain(self) -> None:
        """Move buffered steps to the host and wait until bookkeeping has handled them (tests, demo end)."""
        self._flush()
        self._bookkeeping.drain()

    @property
    def current_step(self) -> int:
        """The latest step reported (the resume step before any)."""
        return self._step

    @property
    def latest(self) -> StepRecord | None:
        """The newest step record the bookkeeping thread has seen."""
        return self._books.latest

    @property
    def speed(self) -> SpeedFigures | None:
        """The speed callback's latest figures."""
        callback = self.callback(SpeedCallback)
        return callback.latest if callback is not None else None

    @property
    def metrics_url(self) -> str | None:
        """Where this node's agent serves metrics (None on ranks that do not own it)."""
        return self.session.metrics_url

    def snapshot(self) -> list[DeviceEnergy]:
        """Cumulative energy of the devices this tracker's agent measures."""
        return self.session.snapshot()

    def energy_j(self) -> float | None:
        """Joules measured by this tracker's agent since it started (None without an agent)."""
        return self.session.energy_j()

    def power_w(self) -> float | None:
        """Latest total power of the measured devices, watts (None without readings)."""
        return self.session.power_w()

    def state_dict(self) -> dict[str, Any]:
        """Step and callback state, to save with a checkpoint."""
        return {
            "step": self._step,
            "callbacks": {type(c).__name__: c.state_dict() for c in self._callbacks},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output."""
        self._step = int(state.get("step", self._step))
        saved = state.get("callbacks", {})
        for callback in self._callbacks:
            if type(callback).__name__ in saved:
                callback.load_state_dict(saved[type(callback).__name__])


def _compose(given: Sequence[Callback], config: TrackerConfig) -> list[Callback]:
    """The given callbacks plus a default of each built-in kind not given, highest priority first."""
    callbacks = list(given)
    kinds = {type(c) for c in callbacks}
    if GCCallback not in kinds:
        gc_every = config.gc_every
        callbacks.append(GCCallback(enabled=gc_every is not None, every_steps=gc_every or 1000))
    if SpeedCallback not in kinds:
        # One rank's tokens over every rank's peak FLOP/s is 1/ranks too small: with several ranks
        # the job's MFU comes from the ledger (wattlog.accounting.job_speed), not this callback.
        peak_flops = config.peak_flops if config.session.world_size == 1 else None
        callbacks.append(SpeedCallback(config.flops_per_token, peak_flops))
    if StabilityCallback not in kinds:
        callbacks.append(StabilityCallback())
    return sorted(callbacks, key=lambda c: -c.priority)
