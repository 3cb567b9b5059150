"""The Tracker: what a training loop calls to measure and record its run.

::

    with Tracker(run="gpt-small-1", site="jupiter", model="gpt-small") as t:
        for batch in data:
            loss = ...
            t.step(loss=loss, tokens=batch.numel(), grad_norm=norm)

Starting it opens the ledger and registers (or, with ``resume``, continues)
the run; on the node's first local rank it starts the telemetry agent with the
ledger as its sink and publishes training progress beside the energy metrics.
``step()`` takes tensors as they are, keeps them on the device and never
syncs; every ``log_every`` steps they are moved in one non-blocking copy and
the bookkeeping thread exports them, runs the callbacks and detectors and
records progress. Leaving the block ends the run (finished, failed or killed).

Nothing the tracker does crashes training: a bad value given to ``step()`` is
one warning line and skipped. Configuration problems (an unknown site, a
ledger that cannot be opened) raise a typed error from ``start()``, before
any training.
"""

from __future__ import annotations

import logging
import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import torch

from wattlog.accounting.ledger import Ledger, LedgerSink, Status, describe_url, make_engine
from wattlog.accounting.ledger.spool import Spool, default_folder
from wattlog.clock import Clock, SystemClock
from wattlog.errors import ConfigError, WattlogError
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.types import DeviceEnergy
from wattlog.trainer.callback import Callback
from wattlog.trainer.callbacks import GCCallback, SpeedCallback, SpeedFigures, StabilityCallback
from wattlog.trainer.detectors import Detection
from wattlog.trainer.exporter import TrainingCollector, TrainingState
from wattlog.trainer.join import JoinedAgents
from wattlog.trainer.metrics import BookkeepingThread, DeviceMetricBuffer, StepRecord
from wattlog.trainer.recorder import RunRecorder
from wattlog.trainer.restarts import LostWork

log = logging.getLogger(__name__)

ENV_RESUME = "WATTLOG_RESUME"
ENV_RUN_ID = "WATTLOG_RUN_ID"
_TRUE = {"1", "true", "yes", "on"}


class Tracker:
    """Measure a training run, record it in the ledger and export it; use as a context manager.

    Args:
        run: Run name (unique in the ledger); None takes $WATTLOG_RUN_ID.
        site: Site from the catalog (`wattlog sites`), or "" to choose at table time.
        model: What is trained (free text, shown in tables).
        project: Project the run belongs to.
        role: final, ablation, baseline, failed or debug.
        log_every: Steps between moves of metrics to the host.
        db: Ledger URL; None = $WATTLOG_DB or sqlite:///wattlog.db.
        resume: Continue the run of that name; None = $WATTLOG_RESUME, or $WATTLOG_RUN_ID set.
        resume_step: Step the job restarts from (its checkpoint); None = the last checkpoint recorded.
        gc_every: Explicit GC every this many steps with automatic GC off; None leaves GC alone.
        flops_per_token: Training FLOPs per token, for MFU.
        peak_flops: Peak FLOP/s of the devices that train, for MFU.
        watch: Module whose output norm is sampled (final layer), for the activation-growth detector.
        health_check: Run the device health check before training (recorded; failing raises).
        device: Device of the health check (cpu, cuda:N).
        callbacks: Extra callbacks (a GC, speed or stability callback given here replaces the default).
        on_event: Called with every detection and restart (alerting webhooks hook in here).
        agent: Start the node agent here; None = when this is the node's local rank 0.
        agent_config: Agent settings (default: port 0, i.e. any free port on 127.0.0.1).
        sensors: Sensors for the agent; None discovers the machine's.
        rank: Global rank; None reads $RANK (0).
        local_rank: Rank within the node; None reads $LOCAL_RANK (0).
        config: Free-form run configuration stored with the run.
        progress_every_s: Seconds between progress events in the ledger.
        join_timeout_s: How long a non-zero rank waits for rank 0 to register the run.
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
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.run = (run or env.get(ENV_RUN_ID, "")).strip()
        if not self.run:
            raise ConfigError(f"the tracker needs a run name: pass run=... or set ${ENV_RUN_ID}")
        if resume is None:
            resume = env.get(ENV_RESUME, "").lower() in _TRUE or bool(env.get(ENV_RUN_ID))
        self.resume = resume
        self.site = site.strip()
        self.model = model.strip()
        if len(self.model) > 200 or len(self.run) > 200:
            raise ConfigError("run and model names must be at most 200 characters")
        if progress_every_s <= 0 or join_timeout_s < 0:
            raise ConfigError("progress_every_s must be > 0 and join_timeout_s >= 0")
        self.project, self.role, self.db = project, role, db
        self.resume_step = resume_step
        self.rank = _int_env(env, "RANK") if rank is None else rank
        self.local_rank = _int_env(env, "LOCAL_RANK") if local_rank is None else local_rank
        self.owns_agent = self.local_rank == 0 if agent is None else agent
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.health_check, self.device = health_check, device
        self._agent_config = agent_config
        self._sensors = sensors
        self._environ = env
        self._config = dict(config or {})
        self._progress_every_s = progress_every_s
        self._join_timeout_s = join_timeout_s
        self._buffer = DeviceMetricBuffer(log_every)
        self._bookkeeping = BookkeepingThread()
        self._state = TrainingState()
        self._hooks = list(on_event)
        self._callbacks = self._compose(callbacks, gc_every, flops_per_token, peak_flops, watch)
        self._extra: dict[str, torch.Tensor | float] = {}
        self._warned: set[str] = set()
        self._step = 0
        self._started = False
        self.ledger: Ledger | None = None
        self.recorder: RunRecorder | None = None
        self.run_id: int | None = None
        self.agent: Agent | None = None
        self.lost: LostWork | None = None
        self.health: Any = None
        self.status: Status | None = None
        self._attempt = 0
        self._attempt_start_s: float | None = None
        self._last_progress_s = -math.inf
        self._last_progress_step: int | None = None
        self._latest: StepRecord | None = None
        self._joined = JoinedAgents(self.clock)
        self._sink: LedgerSink | None = None

    # composition ---------------------------------------------------------

    def _compose(
        self,
        given: Sequence[Callback],
        gc_every: int | None,
        flops_per_token: float | None,
        peak_flops: float | None,
        watch: torch.nn.Module | None,
    ) -> list[Callback]:
        callbacks = list(given)
        kinds = {type(c) for c in callbacks}
        if GCCallback not in kinds:
            callbacks.append(GCCallback(enabled=gc_every is not None, every_steps=gc_every or 1000))
        if SpeedCallback not in kinds:
            callbacks.append(SpeedCallback(flops_per_token, peak_flops))
        if StabilityCallback not in kinds:
            callbacks.append(StabilityCallback())
        for callback in callbacks:
            if isinstance(callback, SpeedCallback):
                callback.energy_j = callback.energy_j or self.energy_j
                callback.on_figures = [*(callback.on_figures or []), self._state.speed]
            if isinstance(callback, StabilityCallback):
                callback.on_detection.append(self._on_detection)
                if watch is not None:
                    callback.watch(watch)
        return sorted(callbacks, key=lambda c: -c.priority)

    @property
    def callbacks(self) -> list[Callback]:
        """The callbacks, highest priority first."""
        return list(self._callbacks)

    def callback(self, kind: type[Callback]) -> Any:
        """The first callback of type `kind` (e.g. SpeedCallback), or None."""
        return next((c for c in self._callbacks if isinstance(c, kind)), None)

    # life cycle ----------------------------------------------------------

    def start(self) -> Tracker:
        """Open the ledger, register the run, start the agent and the bookkeeping thread.

        Raises:
            ConfigError: Unknown site or role.
            LedgerError: The ledger cannot be opened, or the run exists and resume is off.
            WattlogError: The agent cannot start, or the health check failed.
        """
        if self._started:
            raise WattlogError("the tracker is already started")
        if self.site:
            from wattlog.accounting.sites import get_site

            self.site = get_site(self.site).name
        self.ledger = Ledger(make_engine(self.db))
        try:
            self._register()
            if self.owns_agent:
                self._start_agent()
            if self.health_check:
                self._run_health_check()
        except BaseException:
            self._abort()
            raise
        self._bookkeeping.start()
        self._started = True
        for callback in self._callbacks:
            self._safely(f"{type(callback).__name__}.pre_train", callback.pre_train, self)
        return self

    def _register(self) -> None:
        assert self.ledger is not None
        self.recorder = RunRecorder(self.ledger, self.run, self.rank, self._join_timeout_s)
        self._step, self.lost = self.recorder.register(
            project=self.project,
            role=self.role,
            model=self.model,
            site=self.site,
            config=self._config,
            resume=self.resume,
            resume_step=self.resume_step,
        )
        self.run_id, self._attempt = self.recorder.run_id, self.recorder.attempt
        if self.lost is not None:
            energy = self.recorder.record_lost_work(self.lost)
            message = (
                f"restart {self._attempt} of {self.run!r}: {self.lost.steps_redone} steps redone since the "
                f"checkpoint at step {self.lost.from_step} ({energy:.0f} J of lost work)"
            )
            log.warning("%s", message)
            self._emit(Detection("restart", self.lost.from_step, float(self.lost.steps_redone), 0.0, message))

    def _start_agent(self) -> None:
        assert self.ledger is not None and self.run_id is not None
        config = self._agent_config or AgentConfig(port=0)
        self.agent = Agent(
            config,
            sensors=self._sensors,
            sinks=[self._ledger_sink()] if self.run_id is not None else [],
            environ=self._environ,
        )
        self.agent.registry.register(TrainingCollector(self._state, self.run, self.rank, self._bookkeeping))
        self.agent.start()
        for note in self.agent.notes:
            log.info("%s", note)
        self._joined.start(self.agent.held_elsewhere)

    def _ledger_sink(self) -> LedgerSink:
        """The agent's sink: the ledger, with a spool for the rows it cannot take while down."""
        assert self.ledger is not None and self.run_id is not None
        spool = Spool(default_folder(self._environ), describe_url(self.db), self.run_id)
        self._sink = LedgerSink(self.ledger, self.run_id, spool)
        return self._sink

    @property
    def unwritten_rows(self) -> int:
        """Energy rows this run measured that are not in the ledger (spooled or lost); 0 when complete."""
        return self.agent.unwritten_rows if self.agent is not None else 0

    def _run_health_check(self) -> None:
        from wattlog.trainer.health import health_check

        assert self.recorder is not None
        result = self.health = health_check(self.device)
        self.recorder.event(
            "health_check",
            time_s=result.end_s,
            category="health_check",
            payload={**result.payload(), "rank": self.rank},
        )
        if not result.ok:
            raise WattlogError(f"health check failed, not training: {result.summary()}")

    def _abort(self) -> None:
        """Undo a failed start: stop the agent and mark the run failed."""
        if self.agent is not None:
            self._safely("agent.close", self.agent.close)
        if self.recorder is not None:
            self._safely("end_run", self.recorder.end, Status.FAILED)
        for callback in self._callbacks:
            self._safely(f"{type(callback).__name__}.close", callback.close)

    def close(self, error: BaseException | None = None) -> None:
        """Flush the last steps, record progress, stop the agent and end the run; never raises.

        Args:
            error: What ended the training body, if it raised (the run is then failed or killed).
        """
        if not self._started:
            return
        self._started = False
        last = self._buffer.flush()
        self._bookkeeping.close()
        if last is not None:  # handled here, so a full queue cannot drop the final steps
            self._safely("final bookkeeping", lambda: self._bookkeep(last.resolve()))
        if error is not None:
            for callback in self._callbacks:
                self._safely(f"{type(callback).__name__}.on_error", callback.on_error, error)
        self._record_progress(force=True)
        if self.agent is not None:
            self._safely("agent.close", self.agent.close)
        if self._joined and self.ledger is not None and self.run_id is not None:
            self._safely("record the node agent's energy", self._joined.record, self.ledger, self.run_id)
        if isinstance(error, KeyboardInterrupt):
            self.status = Status.KILLED
        else:
            self.status = Status.FAILED if error is not None else Status.FINISHED
        if self.recorder is not None:
            self._safely("end_run", self._end_run, self.status)
        for callback in self._callbacks:
            self._safely(f"{type(callback).__name__}.close", callback.close)

    def _end_run(self, status: Status) -> None:
        """End the run; if the ledger is down, the end goes to the spool (`wattlog replay` applies it)."""
        assert self.recorder is not None
        try:
            self.recorder.end(status)
        except WattlogError:
            spool = self._sink.spool if self._sink is not None else None
            if spool is not None and self.rank == 0 and self.run_id is not None:
                spool.append_end(self.run_id, status.value, self.clock.wall())
            raise

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
                self._warn_once("not-started", "Tracker.step() called outside `with Tracker(...)`: ignored")
                return
            self._step = self._step + 1 if step is None else int(step)
            for callback in self._callbacks:
                callback.pre_step(self._step)
            metrics, self._extra = self._extra, {}
            given = {
                "loss": loss,
                "tokens": tokens,
                "grad_norm": grad_norm,
                "loss_scale": loss_scale,
                **extra,
            }
            for name, value in given.items():
                if value is not None:
                    checked = self._check(name, value)
                    if checked is not None:
                        metrics[name] = checked
            now_s = self.clock.wall()
            if self._attempt_start_s is None:
                self._attempt_start_s = now_s
            due = self._buffer.add(self._step, now_s, metrics)
            for callback in self._callbacks:
                callback.post_step(self._step)
            if due:
                self._flush()
        except Exception as error:  # the tracker must never stop training
            self._warn_once(f"step-{type(error).__name__}", f"Tracker.step() skipped a step: {error}")

    def add_metric(self, name: str, value: torch.Tensor | float) -> None:
        """Attach a metric to the next step reported (callbacks' forward hooks use this)."""
        self._extra[name] = value

    def _check(self, name: str, value: Any) -> torch.Tensor | float | None:
        if isinstance(value, torch.Tensor):
            if value.numel() != 1 or value.is_complex() or value.dtype == torch.bool:
                self._warn_once(
                    f"shape-{name}",
                    f"step({name}=...) needs a one-element real tensor, got shape {tuple(value.shape)} "
                    f"{value.dtype}: value ignored",
                )
                return None
            return value
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            number = float(value)
            if not math.isfinite(number):
                self._warn_once(f"finite-{name}", f"step({name}={number}) at step {self._step} is not finite")
            return number
        self._warn_once(
            f"type-{name}",
            f"step({name}=...) got a {type(value).__name__}; pass a tensor or a number: value ignored",
        )
        return None

    def _flush(self) -> None:
        batch = self._buffer.flush()
        if batch is not None:
            self._bookkeeping.submit(lambda: self._bookkeep(batch.resolve()))

    # the bookkeeping thread ----------------------------------------------

    def _bookkeep(self, records: list[StepRecord]) -> None:
        self._state.observe(records)
        self._latest = records[-1]
        for callback in self._callbacks:
            self._safely(f"{type(callback).__name__}.log_metrics", callback.log_metrics, records)
        self._record_progress()

    def _record_progress(self, force: bool = False) -> None:
        if self.rank != 0 or self.recorder is None or self._latest is None:
            return
        now_s = self.clock.monotonic()
        if not force and now_s - self._last_progress_s < self._progress_every_s:
            return
        if self._latest.step == self._last_progress_step:
            return
        self._last_progress_s, self._last_progress_step = now_s, self._latest.step
        speed = self.speed
        payload: dict[str, Any] = {
            "attempt": self._attempt,
            "attempt_start_s": self._attempt_start_s,
            "tokens_total": self._state.snapshot().tokens_total,
        }
        if speed is not None:
            payload.update(tokens_per_s=speed.tokens_per_s, tokens_per_j=speed.tokens_per_j, mfu=speed.mfu)
        self._safely(
            "record progress",
            self.recorder.event,
            "progress",
            time_s=self._latest.wall_s,
            step=self._latest.step,
            category="productive",
            payload=payload,
        )

    def _on_detection(self, detection: Detection) -> None:
        log.warning("%s", detection.message)
        if self.recorder is not None:
            payload = {
                "value": detection.value,
                "threshold": detection.threshold,
                "message": detection.message,
                "rank": self.rank,
            }
            self._safely(
                "record event",
                self.recorder.event,
                detection.kind,
                step=detection.step,
                category="instability",
                payload=payload,
            )
        self._emit(detection)

    def _emit(self, detection: Detection) -> None:
        self._state.event(detection.kind)
        for hook in self._hooks:
            self._safely("event hook", hook, detection)

    # other calls -----------------------------------------------------------

    def checkpoint(self, step: int | None = None) -> None:
        """Record that the trainer saved a checkpoint at `step` (default: the latest step).

        A restart that resumes from it counts the steps after it as redone.
        """
        if self.recorder is None or self.rank != 0:
            return
        at = self._step if step is None else step
        self._safely("record checkpoint", self.recorder.event, "checkpoint", step=at, category="productive")

    def add_hook(self, hook: Callable[[Detection], None]) -> None:
        """Call `hook` with every later detection and restart."""
        self._hooks.append(hook)

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
        return self._latest

    @property
    def speed(self) -> SpeedFigures | None:
        """The speed callback's latest figures."""
        callback = self.callback(SpeedCallback)
        return callback.latest if callback is not None else None

    @property
    def metrics_url(self) -> str | None:
        """Where this node's agent serves metrics (None on ranks that do not own it)."""
        return self.agent.metrics_url if self.agent is not None else None

    def snapshot(self) -> list[DeviceEnergy]:
        """Cumulative energy of the devices this tracker's agent measures."""
        return self.agent.snapshot() if self.agent is not None else []

    def energy_j(self) -> float | None:
        """Joules measured by this tracker's agent since it started (None without an agent)."""
        if self.agent is None:
            return None
        return sum(d.energy_j for d in self.agent.snapshot())

    def power_w(self) -> float | None:
        """Latest total power of the measured devices, watts (None without readings)."""
        powers = [d.power_w for d in self.snapshot() if d.power_w is not None]
        return sum(powers) if powers else None

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

    # helpers ---------------------------------------------------------------

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s", message)

    def _safely(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            self._warn_once(f"safely-{what}", f"{what} failed: {error}")
            return None


def _int_env(env: Mapping[str, str], name: str) -> int:
    value = env.get(name, "0")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"${name} must be an integer (the process's rank), got {value!r}") from None
