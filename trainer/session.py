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

import contextlib
import logging
import socket
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

from prometheus_client.registry import Collector

from wattlog.accounting.fleet.recording import LedgerTarget, Recording, RecordingConfig
from wattlog.accounting.ledger import Ledger, RunSpec, Status, make_engine
from wattlog.accounting.ledger.admin import run_deleted
from wattlog.accounting.ledger.completeness import Completeness
from wattlog.accounting.ledger.engine import check_integrity, unconnected_engine
from wattlog.accounting.ledger.jobs import created_by_job
from wattlog.causes import LEDGER_OUTAGE, RUN_DELETED
from wattlog.clock import Clock, SystemClock
from wattlog.errors import LedgerError, LedgerUnavailable, RunNotFound, WattlogError
from wattlog.events import EventKind, Stopped
from wattlog.notices import Notices
from wattlog.telemetry.agent import Agent
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.supervise import Outcome
from wattlog.telemetry.types import DeviceEnergy
from wattlog.trainer.attempts import free_run_name, new_attempt_line
from wattlog.trainer.join import JoinedAgents
from wattlog.trainer.offline import close_offline, offline_start
from wattlog.trainer.recorder import RunRecorder
from wattlog.trainer.restarts import LostWork
from wattlog.trainer.session_config import ENV_RESUME, ENV_RUN_ID, SessionConfig
from wattlog.trainer.session_summary import SessionSummary, status_for_error, status_for_outcome

log = logging.getLogger(__name__)
T = TypeVar("T")

__all__ = [
    "ENV_RESUME",
    "ENV_RUN_ID",
    "OfSession",
    "RunSession",
    "SessionConfig",
    "SessionSummary",
    "status_for_error",
    "status_for_outcome",
]


class OfSession(Generic[T]):
    """A read-only Tracker attribute (of any object with a ``session``): its session's of the same name."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, holder: Any, owner: type | None = None) -> T:
        return cast(T, getattr(holder.session, self._name) if holder is not None else self)


class RunSession:
    """One process's part of a run: its ledger rows and, on the node's first rank, the agent.

    Args:
        config: What to record.
        sensors: Sensors for the agent; None discovers the machine's.
        collectors: More Prometheus collectors the agent serves (training progress).
        clock: Time source.
        environ: Environment for the agent's device selection (default: os.environ).
        notices: Where the lines a user must see go (default: stderr).
    """

    def __init__(
        self,
        config: SessionConfig,
        *,
        sensors: Sequence[Sensor] | None = None,
        collectors: Sequence[Collector] = (),
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
        notices: Notices | None = None,
    ) -> None:
        self.config = config
        self.notices = notices if notices is not None else Notices()
        self.first_attempt: str | None = None
        """The run name given, when it existed and this run was recorded under the next free one."""
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
        self.offline: LedgerUnavailable | None = None
        """Why the ledger was unreachable at start (the run is then measured into the spool only)."""
        self._started = False
        self._site_figures: dict[str, Any] | None = None  # the site as accounted, stored at start

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

    def start(
        self, *, while_connecting: contextlib.AbstractContextManager[object] | None = None
    ) -> RunSession:
        """Open the ledger, register the run, start the agent and join the node's other agents.

        Args:
            while_connecting: Entered around opening the ledger only (`wattlog run` passes
                ``Supervisor.raising()``, so a stop signal ends a connect to a silent ledger at once,
                while one that comes later still closes the registered run as preempted).

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
            from wattlog.accounting.carbon.run_sites import site_figures
            from wattlog.accounting.carbon.sites import get_site, run_catalog

            found = get_site(site, run_catalog(self._environ))
            site, self._site_figures = found.name, site_figures(found, self.clock.wall())
        offline: LedgerUnavailable | None = None
        try:
            with while_connecting or contextlib.nullcontext():
                engine = make_engine(cfg.db)
            self.ledger = Ledger(engine)
            check_integrity(self.ledger.engine)  # a damaged ledger: one line, before the command runs
            self._register(site)
        except LedgerUnavailable as error:
            if not (cfg.rank == 0 and cfg.owns_agent):  # other ranks need the run's id from the ledger
                self._abort()
                raise
            offline = error
        except BaseException:
            self._abort()
            raise
        try:
            if offline is not None:
                self._start_offline(offline, site)
            elif cfg.owns_agent:
                self._start_agent()
        except BaseException:
            self._abort()
            raise
        self._started = True
        return self

    def _register(self, site: str) -> None:
        cfg = self.config
        assert self.ledger is not None
        self._new_attempt_if_taken()
        self.recorder = RunRecorder(self.ledger, cfg.run, cfg.rank, cfg.join_timeout_s, self.clock)
        spec = RunSpec(
            cfg.project, cfg.role, cfg.model, site, dict(cfg.config), socket.gethostname(), **cfg.labels,
            site_figures=self._site_figures,
        )  # fmt: skip
        self.start_step, self.lost = self.recorder.register(
            spec,
            resume=cfg.resume,
            resume_step=cfg.resume_step,
            job_id=cfg.job.job_id if cfg.job is not None else None,
        )
        if cfg.job is not None and cfg.local_rank == 0:  # one row per node: the job's nodes
            self.recorder.record_node(cfg.job, measured=cfg.owns_agent)
        if cfg.rank == 0 and (cfg.gpu_hours is not None or cfg.requests is not None):
            self.ledger.set_run_figures(cfg.run, gpu_hours=cfg.gpu_hours, requests=cfg.requests)
        if self.lost is not None:
            self.lost_energy_j = self.recorder.record_lost_work(self.lost)

    def _new_attempt_if_taken(self) -> None:
        """A single-process run whose name exists (and is not its own job's) becomes a new attempt.

        Several ranks keep the name (the others would join the first run): the ledger refuses it.
        """
        cfg = self.config
        assert self.ledger is not None
        if cfg.resume or cfg.rank != 0 or cfg.world_size != 1 or self.ledger.find_run(cfg.run) is None:
            return
        if created_by_job(self.ledger, cfg.run, cfg.job.job_id if cfg.job is not None else None):
            return
        new = free_run_name(self.ledger, cfg.run)
        if new != cfg.run:
            self.first_attempt, cfg.run = cfg.run, new  # the agent's and exporter's labels follow cfg.run
            self.notices.tell(new_attempt_line(self.first_attempt, new))

    def _start_offline(self, error: LedgerUnavailable, site: str) -> None:
        """The ledger is unreachable at start: measure into the spool under the run's name, and say so."""
        self.offline = error
        self.ledger = Ledger(unconnected_engine(self.config.db), clock=self.clock)
        self.recorder = RunRecorder(
            self.ledger, self.run, self.config.rank, self.config.join_timeout_s, self.clock
        )
        self.recorder.offline = True  # its events go to the spool under the run's name
        self._start_agent()
        spool = self.recording.spool if self.recording is not None else None
        assert spool is not None
        start = offline_start(self.config, site, self.host, self.clock.wall())
        spool.append_start(self.run, {**start, "site_figures": self._site_figures})
        log.error(
            "the ledger is unreachable at start (%s): run %s is measured into %s and stored when the ledger "
            "is back (at the end of the run, or by `wattlog replay`)",
            error,
            self.run,
            spool.path,
            extra=LEDGER_OUTAGE,
        )

    def _start_agent(self) -> None:
        assert self.ledger is not None
        key = self.run_id if self.run_id is not None else self.run  # offline: the run by its name
        self.recording = Recording(
            RecordingConfig(self.config.agent_settings),
            LedgerTarget(self.ledger, key, self.config.db),
            sensors=self._sensors,
            collectors=self._collectors,
            environ=self._environ,
        )
        self.agent = self.recording.start().agent
        assert self.agent is not None
        if self.recorder is not None:  # events spooled like the energy rows while the ledger is down
            self.recorder.spool = self.recording.spool
        self._joined.start(self.agent.held_elsewhere)

    @property
    def unwritten_rows(self) -> int:
        """Energy rows this run measured that are not in the ledger (kept, spooled or lost); 0 if none."""
        return self.agent.unwritten_rows if self.agent is not None else 0

    def completeness(self) -> Completeness:
        """What this run measured that is not in the ledger: rows, its start or end, events, revisions."""
        return self.recording.completeness() if self.recording is not None else Completeness()

    def _end_run(self, status: Status) -> None:
        """End the run; if the ledger is down, the end goes to the spool (`wattlog replay` applies it)."""
        assert self.recorder is not None
        try:
            self.recorder.end(status)
        except WattlogError as error:
            spool = self.recording.spool if self.recording is not None else None
            deleted = self.run_id is not None and run_deleted(error, self.run_id)  # no run to end
            if spool is not None and self.config.rank == 0 and self.run_id is not None and not deleted:
                spool.append_end(self.run_id, status.value, self.recorder.end_s())
            raise

    def _abort(self) -> None:
        """Undo a failed start: stop the agent and mark the run failed."""
        if self.agent is not None:
            _safely("agent.close", self.agent.close)
        if self.recorder is not None:
            _safely("end_run", self.recorder.end, Status.FAILED)

    def close(self, status: Status, *, stopped: Outcome | None = None) -> SessionSummary:
        """Stop the agent (flushing its last interval), record joined agents, end the run; never raises.

        The run is ended before the agent lingers for Prometheus's final scrape, so a preemption
        grace period too short for both still leaves the run closed.

        Args:
            status: The run's final status.
            stopped: The outcome of a command stopped by a signal, recorded as a ``stopped`` event.
        """
        if not self._started:
            return SessionSummary(status, None, 0.0)
        self._started = False
        self.status = status
        if self.agent is not None:
            _safely("agent.close", self.agent.close, linger=False)
        if self.recording is not None:
            _safely("record the counter checks", self.recording.record_counter_checks)
        if self._joined and self.ledger is not None and self.run_id is not None:
            _safely("record the node agent's energy", self._joined.record, self.ledger, self.run_id)
        if stopped is not None and stopped.received is not None and self.recorder is not None:
            payload = Stopped(stopped.received.name, stopped.exit_code).to_json()
            _safely("record the stop", self.recorder.event, EventKind.STOPPED, payload=payload)
        if self.recorder is not None:
            _safely("end_run", self._end_run, status)
        spool = self.recording.spool if self.recording is not None else None
        if self.offline is not None and spool is not None and self.ledger is not None:
            _safely("store the run", close_offline, spool, self.ledger, self.run, status)
        if self.agent is not None:
            _safely("agent.linger", self.agent.linger)
        if self.config.rank == 0 and self.config.site and self.offline is None and self.ledger is not None:
            _safely("fetch the run's grid intensity", self._fetch_intensity)
        recorded = self.recording.recorded_j if self.recording is not None else 0.0
        if self.agent is None:
            return SessionSummary(status, None, recorded, self.completeness())
        measured = tuple(d.figure for d in self.agent.snapshot())
        return SessionSummary(status, measured, recorded, self.completeness())

    def _fetch_intensity(self) -> None:
        """Fetch the run's hours from its site's provider (if it names one), within the close's budget."""
        assert self.ledger is not None
        from wattlog.accounting.carbon.intensity.live.at_close import fetch_at_close
        from wattlog.accounting.carbon.intensity.live.providers import ProviderContext
        from wattlog.accounting.carbon.sites import run_catalog

        done = fetch_at_close(
            self.ledger, self.run, run_catalog(self._environ), ProviderContext(environ=self._environ)
        )
        if done is not None:  # a ledger that failed at the close fails this too: its outage is said once
            outage = LEDGER_OUTAGE if not self.completeness().complete else None
            (log.info if done.ok else log.warning)("%s", done.line, extra=outage)

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
        log.warning("%s failed: %s", what, error, extra=cause_of(error))
        return None


def cause_of(error: BaseException) -> dict[str, str] | None:
    """The cause a failure of the ledger reports, so an outage or a deleted run is said once."""
    if isinstance(error, RunNotFound):
        return RUN_DELETED
    return LEDGER_OUTAGE if isinstance(error, LedgerError) else None
