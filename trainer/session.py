"""The run session: a run registered in the ledger, measured by the node's agent, closed with its status.

Torch-free, so `wattlog run -- CMD` works where torch is not installed; the
Tracker adds the training hot path and callbacks on top of it::

    session = RunSession(SessionConfig.from_env("job-1", db="sqlite:///l.db")).start()
    try:
        ...                                   # the agent samples and flushes to the ledger
    finally:
        summary = session.close(Status.FINISHED)

Starting opens the ledger and registers (or, with ``resume``, continues) the
run, or joins the run its own scheduler job's node agents created; the node's
first local rank records the node in the run's job and, unless the node is
sampled out (``sample_nodes``), starts the telemetry agent with the ledger as
its sink and joins the devices another agent already measures.
Closing stops the agent (which flushes its last interval), records the joined
agents' energy and ends the run; it never raises, and its summary says
whether every joule measured reached the ledger.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import signal
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.registry import Collector

from wattlog.accounting.footprint import energy_label
from wattlog.accounting.ledger import Ledger, Status, make_engine
from wattlog.accounting.recording import LedgerTarget, Recording, RecordingConfig
from wattlog.clock import Clock, SystemClock
from wattlog.errors import ConfigError, WattlogError
from wattlog.events import EventKind, Stopped
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.job import JobIdentity, job_identity, sample_nodes_from
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.supervise import Ending, Outcome, StopRequested
from wattlog.telemetry.types import DeviceEnergy
from wattlog.trainer.join import JoinedAgents
from wattlog.trainer.recorder import RunRecorder
from wattlog.trainer.restarts import LostWork

log = logging.getLogger(__name__)

ENV_RESUME = "WATTLOG_RESUME"
ENV_RUN_ID = "WATTLOG_RUN_ID"
_TRUE = {"1", "true", "yes", "on"}
_MAX_NAME = 200


@dataclass
class SessionConfig:
    """What run to record, where, and who measures it; validated once, on construction.

    Raises:
        ConfigError: On construction, if a value is missing or out of range.
    """

    run: str
    """Run name, unique in the ledger."""
    site: str = ""
    """Site from the catalog (`wattlog sites`), or "" to choose at table time."""
    model: str = ""
    """What is trained (free text, shown in tables)."""
    project: str = "default"
    """Project the run belongs to."""
    role: str = "final"
    """final, ablation, baseline, failed or debug."""
    db: str | None = None
    """Ledger URL; None = $WATTLOG_DB or sqlite:///wattlog.db."""
    resume: bool = False
    """Continue the run of that name (a restart) instead of creating it."""
    resume_step: int | None = None
    """Step the job restarts from (its checkpoint); None = the last checkpoint recorded."""
    rank: int = 0
    """Global rank of this process (rank 0 registers and ends the run)."""
    local_rank: int = 0
    """Rank within the node."""
    job: JobIdentity | None = None
    """This process's place in a multi-node job (SLURM / torchrun); None = a job of one node."""
    sample_nodes: int | None = None
    """Measure only this many of the job's nodes (spread evenly; the others report steps only and
    the run's energy is extrapolated); None = every node."""
    agent: bool | None = None
    """Start the node agent here; None = when this is the node's local rank 0 and the node is measured."""
    agent_config: AgentConfig | None = None
    """Agent settings (default: port 0, i.e. any free port on 127.0.0.1)."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """Free-form run configuration stored with the run."""
    join_timeout_s: float = 60.0
    """How long a non-zero rank waits for rank 0 to register the run, seconds."""
    phase: str = ""
    """development or final ("" = from the role: final -> final, else development)."""
    stage: str = ""
    """pretraining, mid-training, sft, dpo, rl, evaluation, inference or debugging ("" = none)."""
    scale_group: str = ""
    """The model scale the run belongs to (e.g. "7B"): the project tables' groups."""
    device_model: str = ""
    """Accelerator model (e.g. "H100"): embodied figures and power limit."""
    gpu_hours: float | None = None
    """GPU-hours to record for the run (None: derived from its GPU rows)."""
    requests: int | None = None
    """Requests served (an inference run), for the break-even with training."""

    def __post_init__(self) -> None:
        """Validate the settings."""
        self.run, self.site, self.model = self.run.strip(), self.site.strip(), self.model.strip()
        if not self.run:
            raise ConfigError(f"the tracker needs a run name: pass run=... or set ${ENV_RUN_ID}")
        if len(self.model) > _MAX_NAME or len(self.run) > _MAX_NAME:
            raise ConfigError(f"run and model names must be at most {_MAX_NAME} characters")
        if not self.join_timeout_s >= 0:
            raise ConfigError(f"join_timeout_s must be >= 0, got {self.join_timeout_s}")
        if self.rank < 0 or self.local_rank < 0:
            raise ConfigError(f"ranks must be >= 0, got rank {self.rank}, local rank {self.local_rank}")
        if self.resume_step is not None and self.resume_step < 0:
            raise ConfigError(f"resume_step must be >= 0, got {self.resume_step}")
        if self.gpu_hours is not None and not (math.isfinite(self.gpu_hours) and self.gpu_hours >= 0):
            raise ConfigError(f"GPU-hours must be a finite number >= 0, got {self.gpu_hours}")
        if self.requests is not None and self.requests < 0:
            raise ConfigError(f"requests must be >= 0, got {self.requests}")
        if self.sample_nodes is not None and self.sample_nodes < 1:
            raise ConfigError(f"sample_nodes must be >= 1 (or None: every node), got {self.sample_nodes}")
        self.config = dict(self.config)

    @property
    def labels(self) -> dict[str, str]:
        """The run's labels as Ledger.start_run takes them (phase, stage, scale_group, device_model)."""
        return {
            "phase": self.phase,
            "stage": self.stage,
            "scale_group": self.scale_group,
            "device_model": self.device_model,
        }

    @property
    def agent_settings(self) -> AgentConfig:
        """The agent's settings: `agent_config` (default: port 0), its series labelled with this run.

        The run label comes from the agent itself, so a later run that reuses the port never mixes
        into this one; an `agent_config` that names a run keeps it.
        """
        config = self.agent_config or AgentConfig(port=0)
        return config if config.run else dataclasses.replace(config, run=self.run)

    @property
    def node_measured(self) -> bool:
        """Whether this node is one of the measured ones (always, outside a sampled multi-node job)."""
        return self.job is None or self.job.measured(self.sample_nodes)

    @property
    def world_size(self) -> int:
        """Processes in the job (1 when no job identity is known)."""
        return self.job.world_size if self.job is not None else 1

    @property
    def owns_agent(self) -> bool:
        """Whether this process starts the node's agent."""
        return (self.local_rank == 0 and self.node_measured) if self.agent is None else self.agent

    @classmethod
    def from_env(
        cls,
        run: str | None = None,
        *,
        resume: bool | None = None,
        rank: int | None = None,
        local_rank: int | None = None,
        sample_nodes: int | None = None,
        environ: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> SessionConfig:
        """A config whose unset run name, resume flag, ranks and job identity come from the environment.

        Args:
            run: Run name; None takes $WATTLOG_RUN_ID.
            resume: None = $WATTLOG_RESUME is true, or $WATTLOG_RUN_ID is set.
            rank: None reads $RANK, else $SLURM_PROCID (0).
            local_rank: None reads $LOCAL_RANK, else $SLURM_LOCALID (0).
            sample_nodes: None reads $WATTLOG_SAMPLE_NODES (unset: every node is measured).
            environ: The environment (default: os.environ).
            **settings: The other fields (the job's host is ``agent_config.host`` when given).
        """
        env = os.environ if environ is None else environ
        if resume is None:
            resume = env.get(ENV_RESUME, "").lower() in _TRUE or bool(env.get(ENV_RUN_ID))
        agent_config = settings.get("agent_config")
        job = job_identity(env, host=agent_config.host if agent_config is not None else None)
        return cls(
            run=run or env.get(ENV_RUN_ID, ""),
            resume=resume,
            rank=job.rank if rank is None else rank,
            local_rank=job.local_rank if local_rank is None else local_rank,
            job=job,
            sample_nodes=sample_nodes_from(env, sample_nodes),
            **settings,
        )


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """How a session ended and whether its energy is all in the ledger.

    Attributes:
        status: The run's final status.
        measured_j: Joules this session's agent integrated (None without an agent).
        recorded_j: Joules of those in the ledger (rows still in the spool or lost not counted).
        unwritten_rows: Energy rows not in the ledger: kept for retry, spooled (`wattlog replay`) or lost.
        source: The measured energy's source label ("counter", "estimated+simulated", ...).
        low_j: Lower end of the measured energy's band, joules.
        high_j: Upper end of the measured energy's band, joules.
    """

    status: Status
    measured_j: float | None
    recorded_j: float
    unwritten_rows: int = 0
    source: str = ""
    low_j: float = 0.0
    high_j: float = 0.0

    @property
    def complete(self) -> bool:
        """Whether every joule measured reached the ledger (to rounding) and no row waits in the spool."""
        if self.measured_j is None:
            return self.unwritten_rows == 0
        same = abs(self.measured_j - self.recorded_j) <= 1e-9 * max(1.0, abs(self.measured_j))
        return same and self.unwritten_rows == 0

    def line(self) -> str:
        """One line for the user: the energy measured and how much of it is in the ledger."""
        if self.measured_j is None:
            return "no agent in this process: the node's agent records the energy"
        if self.complete:
            verdict = "all recorded"
        elif self.unwritten_rows:
            verdict = (
                f"INCOMPLETE: {self.unwritten_rows} energy rows are not in the ledger, "
                "spooled for `wattlog replay` or lost"
            )
        else:
            verdict = "INCOMPLETE: the rest is not in the ledger"
        return (
            f"measured {self.measured_j:.3f} J, {self.recorded_j:.3f} J recorded in the ledger ({verdict}); "
            f"source {self.source or 'none'}, band {self.low_j:.3f}-{self.high_j:.3f} J"
        )


def status_for_error(error: BaseException | None) -> Status:
    """The status of a run whose body ended with `error` (None: it finished)."""
    if error is None:
        return Status.FINISHED
    if isinstance(error, StopRequested):
        return Status.PREEMPTED if error.signum is signal.SIGTERM else Status.KILLED
    if isinstance(error, KeyboardInterrupt):
        return Status.KILLED
    return Status.FAILED


def status_for_outcome(outcome: Outcome) -> Status:
    """The status of a run whose command ended with `outcome`."""
    if outcome.ending is Ending.STOPPED:
        return Status.PREEMPTED if outcome.preempted else Status.KILLED
    if outcome.ending is Ending.SIGNALLED:
        return Status.KILLED
    if outcome.ending is Ending.FINISHED:
        return Status.FINISHED
    return Status.FAILED


class RunSession:
    """One process's part of a run: its ledger rows and, on the node's first rank, the agent.

    Args:
        config: What to record.
        sensors: Sensors for the agent; None discovers the machine's.
        collectors: More Prometheus collectors the agent serves (training progress).
        clock: Time source.
        environ: Environment for the agent's device selection (default: os.environ).
    """

    def __init__(
        self,
        config: SessionConfig,
        *,
        sensors: Sequence[Sensor] | None = None,
        collectors: Sequence[Collector] = (),
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._sensors = sensors
        self._collectors = list(collectors)
        self._environ = environ
        self._joined = JoinedAgents(self.clock)
        self.recording: Recording | None = None
        self.ledger: Ledger | None = None
        self.recorder: RunRecorder | None = None
        self.agent: Agent | None = None
        self.lost: LostWork | None = None
        self.lost_energy_j = 0.0
        self.start_step = 0
        self.status: Status | None = None
        self._started = False

    @property
    def run(self) -> str:
        """The run's name."""
        return self.config.run

    @property
    def run_id(self) -> int | None:
        """The run's id in the ledger (None before start())."""
        return self.recorder.run_id if self.recorder is not None else None

    @property
    def attempt(self) -> int:
        """0 for the first attempt, +1 per restart."""
        return self.recorder.attempt if self.recorder is not None else 0

    @property
    def host(self) -> str:
        """This node's name: the job's host, else the agent's `host` label, else the machine's name."""
        if self.config.job is not None:
            return self.config.job.host
        agent_config = self.config.agent_config
        return agent_config.host if agent_config is not None else socket.gethostname()

    @property
    def started(self) -> bool:
        """Whether start() succeeded and close() has not run yet."""
        return self._started

    def start(self) -> RunSession:
        """Open the ledger, register the run, start the agent and join the node's other agents.

        Raises:
            ConfigError: Unknown site or role.
            LedgerError: The ledger cannot be opened, or the run exists and resume is off.
            WattlogError: Already started, or the agent cannot start.
        """
        if self._started:
            raise WattlogError(f"the session of run {self.run!r} is already started")
        cfg = self.config
        site = cfg.site
        if site:
            from wattlog.accounting.sites import get_site

            site = get_site(site).name
        self.ledger = Ledger(make_engine(cfg.db))
        try:
            self.recorder = RunRecorder(self.ledger, cfg.run, cfg.rank, cfg.join_timeout_s)
            self.start_step, self.lost = self.recorder.register(
                project=cfg.project,
                role=cfg.role,
                model=cfg.model,
                site=site,
                config=cfg.config,
                resume=cfg.resume,
                resume_step=cfg.resume_step,
                job_id=cfg.job.job_id if cfg.job is not None else None,
                **cfg.labels,
            )
            if cfg.job is not None and cfg.local_rank == 0:  # one row per node: the job's nodes
                self.recorder.record_node(cfg.job, measured=cfg.owns_agent)
            if cfg.rank == 0 and (cfg.gpu_hours is not None or cfg.requests is not None):
                self.ledger.set_run_figures(cfg.run, gpu_hours=cfg.gpu_hours, requests=cfg.requests)
            if self.lost is not None:
                self.lost_energy_j = self.recorder.record_lost_work(self.lost)
            if cfg.owns_agent:
                self._start_agent()
        except BaseException:
            self._abort()
            raise
        self._started = True
        return self

    def _start_agent(self) -> None:
        assert self.ledger is not None and self.run_id is not None
        self.recording = Recording(
            RecordingConfig(self.config.agent_settings),
            LedgerTarget(self.ledger, self.run_id, self.config.db),
            sensors=self._sensors,
            collectors=self._collectors,
            environ=self._environ,
        )
        self.agent = self.recording.start().agent
        assert self.agent is not None
        self._joined.start(self.agent.held_elsewhere)

    @property
    def unwritten_rows(self) -> int:
        """Energy rows this run measured that are not in the ledger (kept, spooled or lost); 0 if none."""
        return self.agent.unwritten_rows if self.agent is not None else 0

    def _end_run(self, status: Status) -> None:
        """End the run; if the ledger is down, the end goes to the spool (`wattlog replay` applies it)."""
        assert self.recorder is not None
        try:
            self.recorder.end(status)
        except WattlogError:
            spool = self.recording.spool if self.recording is not None else None
            if spool is not None and self.config.rank == 0 and self.run_id is not None:
                spool.append_end(self.run_id, status.value, self.clock.wall())
            raise

    def _abort(self) -> None:
        """Undo a failed start: stop the agent and mark the run failed."""
        if self.agent is not None:
            _safely("agent.close", self.agent.close)
        if self.recorder is not None:
            _safely("end_run", self.recorder.end, Status.FAILED)

    def close(self, status: Status, *, stopped: Outcome | None = None) -> SessionSummary:
        """Stop the agent (flushing its last interval), record joined agents, end the run; never raises.

        Args:
            status: The run's final status.
            stopped: The outcome of a command stopped by a signal, recorded as a ``stopped`` event.
        """
        if not self._started:
            return SessionSummary(status, None, 0.0)
        self._started = False
        self.status = status
        if self.agent is not None:
            _safely("agent.close", self.agent.close)
        if self._joined and self.ledger is not None and self.run_id is not None:
            _safely("record the node agent's energy", self._joined.record, self.ledger, self.run_id)
        if stopped is not None and stopped.received is not None and self.recorder is not None:
            payload = Stopped(stopped.received.name, stopped.exit_code).to_json()
            _safely("record the stop", self.recorder.event, EventKind.STOPPED, payload=payload)
        if self.recorder is not None:
            _safely("end_run", self._end_run, status)
        recorded = self.recording.recorded_j if self.recording is not None else 0.0
        if self.agent is None:
            return SessionSummary(status, None, recorded, self.unwritten_rows)
        devices = self.agent.snapshot()
        # A rank that joined another agent's node measures no device of its own: no source to name.
        source = energy_label(d.device.source for d in devices) if devices else ""
        return SessionSummary(
            status,
            sum(d.energy_j for d in devices),
            recorded,
            self.unwritten_rows,
            source=source,
            low_j=sum(d.low_j for d in devices),
            high_j=sum(d.high_j for d in devices),
        )

    # what the agent measures ----------------------------------------------

    @property
    def metrics_url(self) -> str | None:
        """Where this node's agent serves metrics (None on ranks that do not own it)."""
        return self.agent.metrics_url if self.agent is not None else None

    def snapshot(self) -> list[DeviceEnergy]:
        """Cumulative energy of the devices this session's agent measures."""
        return self.agent.snapshot() if self.agent is not None else []

    def energy_j(self) -> float | None:
        """Joules measured by this session's agent since it started (None without an agent)."""
        if self.agent is None:
            return None
        return sum(d.energy_j for d in self.agent.snapshot())

    def power_w(self) -> float | None:
        """Latest total power of the measured devices, watts (None without readings)."""
        powers = [d.power_w for d in self.snapshot() if d.power_w is not None]
        return sum(powers) if powers else None


def _safely(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a step of closing; a failure is one warning, and the later steps still run."""
    try:
        return fn(*args, **kwargs)
    except Exception as error:
        log.warning("%s failed: %s", what, error)
        return None
