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

When the run ends, rank 0 prints a few lines: the energy with its band and source, CO2 and
water (or what to pass for them), the ledger, and the command that prints the full table
(``table=True``: the run beside Table 19; ``quiet=True``: nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import torch

from wattlog.accounting.ledger import Ledger, Status
from wattlog.accounting.publishing.run_report import print_run_end
from wattlog.clock import Clock
from wattlog.errors import ConfigError, WattlogError
from wattlog.events import EventCategory, EventKind
from wattlog.telemetry.agent import Agent
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.supervise import StopRequested
from wattlog.telemetry.types import DeviceEnergy
from wattlog.trainer.bookkeeper import Bookkeeper
from wattlog.trainer.callback import Callback, CallbackContext
from wattlog.trainer.callbacks import SpeedCallback, SpeedFigures, compose_callbacks
from wattlog.trainer.detectors import Detection
from wattlog.trainer.exporter import TrainingCollector, TrainingState
from wattlog.trainer.hot_path import HotPath
from wattlog.trainer.metrics import BookkeepingThread, StepRecord
from wattlog.trainer.recorder import RunRecorder
from wattlog.trainer.restarts import LostWork
from wattlog.trainer.session import (
    ENV_RESUME,
    ENV_RUN_ID,
    OfSession,
    RunSession,
    SessionConfig,
    SessionSummary,
    status_for_error,
)
from wattlog.trainer.step_values import StepValues
from wattlog.trainer.stop_signals import CloseOnSignals
from wattlog.trainer.tracker_config import TrackerConfig

log = logging.getLogger(__name__)

__all__ = ["ENV_RESUME", "ENV_RUN_ID", "SessionConfig", "Tracker", "TrackerConfig"]


class Tracker:
    """Measure a training run, record it in the ledger and export it; use as a context manager.

    Configured by a :class:`TrackerConfig` (``Tracker(config=TrackerConfig(SessionConfig("run"), ...))``),
    validated once. The short form ``Tracker("run", site="jupiter", log_every=5)`` builds that
    config from keywords: the fields of :class:`SessionConfig` and of :class:`TrackerConfig`, and
    ``config=`` a mapping (the run's free-form configuration); unset names, ranks and the job
    identity then come from the environment ($WATTLOG_RUN_ID, $WATTLOG_RESUME, $RANK else
    $SLURM_PROCID, $LOCAL_RANK else $SLURM_LOCALID, $WATTLOG_SAMPLE_NODES, SLURM's and torchrun's
    job variables). The other arguments are what the tracker works with:

    Args:
        run: Run name (short form; None: $WATTLOG_RUN_ID).
        config: The tracker's settings, or (short form) the run's free-form configuration.
        watch: Module whose output norm is sampled (final layer), for the activation-growth detector.
        callbacks: Extra callbacks (a GC, speed or stability callback given here replaces the default).
            They are used as given: the tracker never changes their fields.
        on_event: Called with every detection and restart (alerting webhooks hook in here).
        sensors: Sensors for the agent; None discovers the machine's.
        clock: Time source.
        environ: Environment (default: os.environ).
        **settings: Short form only: SessionConfig and TrackerConfig fields by name.

    Raises:
        ConfigError: A value is out of range, or both a TrackerConfig and keywords are given.
    """

    def __init__(
        self,
        run: str | None = None,
        config: TrackerConfig | Mapping[str, Any] | None = None,
        *,
        watch: torch.nn.Module | None = None,
        callbacks: Sequence[Callback] = (),
        on_event: Sequence[Callable[[Detection], None]] = (),
        sensors: Sequence[Sensor] | None = None,
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> None:
        if isinstance(config, TrackerConfig):
            if settings or (run is not None and run != config.session.run):
                raise ConfigError(
                    "give the Tracker either a TrackerConfig or keywords, not both: put "
                    f"{sorted(settings) or ['run']} in the config"
                )
        else:  # the short form: keywords (and the run's free-form config) become a TrackerConfig
            config = TrackerConfig.from_kwargs(run, environ=environ, config=config, **settings)
        self.settings = config
        self._build(callbacks, on_event, watch, sensors, clock, environ)

    @classmethod
    def from_config(cls, config: TrackerConfig, **parts: Any) -> Tracker:
        """A tracker from a validated :class:`TrackerConfig`: ``Tracker(config=config, **parts)``."""
        return cls(config=config, **parts)

    # the parts, built once the config is known (the constructor goes on here)

    def _build(
        self,
        callbacks: Sequence[Callback],
        on_event: Sequence[Callable[[Detection], None]],
        watch: torch.nn.Module | None,
        sensors: Sequence[Sensor] | None,
        clock: Clock | None,
        environ: Mapping[str, str] | None,
    ) -> None:
        config = self.settings
        self._state = TrainingState()
        s = config.session
        self._bookkeeping = BookkeepingThread()
        self.session = RunSession(
            s,
            sensors=sensors,
            collectors=[
                TrainingCollector(
                    self._state, lambda: s.run, s.rank, self._bookkeeping, host=s.agent_settings.host
                )
            ],
            clock=clock,
            environ=environ,
        )
        self.clock: Clock = self.session.clock
        self._watch = watch
        self._values = StepValues(log)
        # One rank's tokens over every rank's peak FLOP/s is 1/ranks too small: with several ranks
        # the job's MFU comes from the ledger (wattlog.accounting.publishing.job_speed), not the
        # speed callback.
        peak_flops = config.peak_flops if s.world_size == 1 else None
        self._callbacks = compose_callbacks(callbacks, config.gc_every, config.flops_per_token, peak_flops)
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
        self._path = HotPath(
            config.log_every, self._callbacks, self._books, self._bookkeeping, self._values, self.clock
        )
        self._started = False
        self._signals = CloseOnSignals(lambda signum: self.close(StopRequested(signum)))
        self.health: Any = None
        self.status: Status | None = None
        self.summary: SessionSummary | None = None
        self.stuck_threads: list[str] = []
        """Threads close() gave up waiting for (named in a warning when it did): [] when all stopped."""

    # what the session holds, under the names the tracker always had

    run = OfSession[str]("The run's name.")
    ledger = OfSession[Ledger | None]("The ledger (None before start()).")
    recorder = OfSession[RunRecorder | None]("The run's ledger writer (None before start()).")
    run_id = OfSession[int | None]("The run's id in the ledger (None before start()).")
    agent = OfSession[Agent | None]("This process's agent (None on ranks that do not own it).")
    lost = OfSession[LostWork | None]("The work a resume redoes (None if none).")
    unwritten_rows = OfSession[int]("Energy rows measured that are not in the ledger (spooled or lost).")
    metrics_url = OfSession[str | None]("Where this node's agent serves metrics (None: not this rank).")
    snapshot = OfSession[Callable[[], list[DeviceEnergy]]]("Cumulative energy of the agent's devices.")
    energy_j = OfSession[Callable[[], float | None]]("Joules the agent measured (None without one).")
    power_w = OfSession[Callable[[], float | None]]("Latest total power, watts (None without readings).")

    @property
    def site(self) -> str:
        """The run's site as given."""
        return self.session.config.site

    @property
    def rank(self) -> int:
        """Global rank of this process."""
        return self.session.config.rank

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
            LedgerError: The ledger cannot be opened, or a job of several ranks reuses a run name.
            WattlogError: The agent cannot start, or the health check failed.
        """
        if self._started:
            raise WattlogError("the tracker is already started")
        self.session.start()
        self._path.step = self.session.start_step
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
        if self.settings.handle_signals:
            self._signals.install()
        context = self._context()
        for callback in self._callbacks:
            self._safely(f"{type(callback).__name__}.pre_train", callback.pre_train, context)
        return self

    def _run_health_check(self) -> None:
        from wattlog.trainer.health import health_check

        self.health = health_check(self.settings.device)
        self._books.health_checked(self.health)  # raises if it failed: no training on a bad device

    def close(self, error: BaseException | None = None) -> None:
        """Flush the last steps, record progress, end the run through the session; never raises.

        Args:
            error: What ended the training body, if it raised: the run is then failed, killed
                (KeyboardInterrupt) or preempted (a SIGTERM's StopRequested).
        """
        self._signals.restore()
        if not self._started:
            return
        self._started = False
        if not self._path.close(self.settings.stop_timeout_s):
            self.stuck_threads.append(self._bookkeeping.name)
        if error is not None:
            for callback in self._callbacks:
                self._safely(f"{type(callback).__name__}.on_error", callback.on_error, error)
        self._books.record_progress(force=True)
        self.status = status_for_error(error)
        self.summary = self.session.close(self.status)
        if not self.summary.done.complete:  # the verdict `wattlog run` and `wattlog node` print too
            log.error("%s", self.summary.done.line("wattlog tracker", self.run))
        for callback in self._callbacks:
            self._safely(f"{type(callback).__name__}.close", callback.close)
        if self.rank == 0 and self.ledger is not None and not self.settings.quiet:
            db, table = self.session.config.db, self.settings.table
            self._safely("print the run's figures", print_run_end, self.ledger, self.run, db, table=table)

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
        if not self._started:
            self._values.warn_once(
                "not-started", "Tracker.step() called outside `with Tracker(...)`: ignored"
            )
            return
        given = dict(loss=loss, tokens=tokens, grad_norm=grad_norm, loss_scale=loss_scale, **extra)
        self._path.add(given, step)

    def add_metric(self, name: str, value: torch.Tensor | float) -> None:
        """Attach a metric to the next step reported (callbacks' forward hooks use this)."""
        self._path.add_metric(name, value)

    # other calls -----------------------------------------------------------

    def checkpoint(self, step: int | None = None) -> None:
        """Record that the trainer saved a checkpoint at `step` (default: the latest step).

        A restart that resumes from it counts the steps after it as redone.
        """
        if self.recorder is None or self.rank != 0:
            return
        at = self._path.step if step is None else step
        self._safely(
            "record checkpoint",
            self.recorder.event,
            EventKind.CHECKPOINT,
            step=at,
            category=EventCategory.PRODUCTIVE,
        )
        self._state.event(EventKind.CHECKPOINT)  # the dashboards' checkpoint annotation counts these

    def add_hook(self, hook: Callable[[Detection], None]) -> None:
        """Call `hook` with every later detection and restart."""
        self._books.hooks.append(hook)

    def drain(self) -> None:
        """Move buffered steps to the host and wait until bookkeeping has handled them (tests, demo end)."""
        self._path.drain()

    @property
    def current_step(self) -> int:
        """The latest step reported (the resume step before any)."""
        return self._path.step

    @property
    def latest(self) -> StepRecord | None:
        """The newest step record the bookkeeping thread has seen."""
        return self._books.latest

    @property
    def speed(self) -> SpeedFigures | None:
        """The speed callback's latest figures."""
        callback = self.callback(SpeedCallback)
        return callback.latest if callback is not None else None

    def state_dict(self) -> dict[str, Any]:
        """Step and callback state, to save with a checkpoint."""
        return {
            "step": self._path.step,
            "callbacks": {type(c).__name__: c.state_dict() for c in self._callbacks},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output."""
        self._path.step = int(state.get("step", self._path.step))
        saved = state.get("callbacks", {})
        for callback in self._callbacks:
            if type(callback).__name__ in saved:
                callback.load_state_dict(saved[type(callback).__name__])
