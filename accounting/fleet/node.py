"""One node of a multi-node job: join the run in the shared ledger, measure the node, flush into it.

What ``wattlog node`` runs on every node (one per node, e.g. ``srun --ntasks-per-node=1``)::

    node = NodeAgent(NodeOptions(run="job-4242", db="postgresql+psycopg://..."), environ=os.environ)
    node.start()     # joins the run (created by whichever node comes first), starts the agent
    ...
    node.close()     # last flush; the node's energy is in the ledger (served until scraped: linger_s)

The node's place in the job comes from SLURM or torchrun (:mod:`wattlog.telemetry.job`).
With ``sample_nodes=K`` only K of the job's N nodes (spread evenly) start an
agent; the others join the run as not measured, so the tables know N and
extrapolate (:mod:`wattlog.accounting.publishing.extrapolate`). The agent is the same
:class:`~wattlog.accounting.fleet.recording.Recording` the tracker and ``wattlog agent`` run,
with the ledger and its spool as its sink.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from wattlog.accounting.fleet.recording import LedgerTarget, Recording, RecordingConfig
from wattlog.accounting.ledger.completeness import Completeness
from wattlog.accounting.ledger.connections import Connections
from wattlog.accounting.ledger.engine import make_engine, unconnected_engine
from wattlog.accounting.ledger.jobs import join_run
from wattlog.accounting.ledger.node_lease import NodeHolder
from wattlog.accounting.ledger.store import Ledger
from wattlog.causes import LEDGER_OUTAGE
from wattlog.errors import ConfigError, LedgerUnavailable
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.job import JobIdentity, job_identity, sample_nodes_from
from wattlog.telemetry.sensors.base import Sensor

log = logging.getLogger(__name__)


@dataclass
class NodeOptions:
    """How a node joins its job and measures.

    Raises:
        ConfigError: On construction, if a value is out of range.
    """

    run: str
    """The run's name, the same on every node (e.g. ``job-$SLURM_JOB_ID``)."""
    db: str | None = None
    """Ledger URL shared by every node; None = $WATTLOG_DB."""
    sample_nodes: int | None = None
    """Measure only this many of the job's nodes; None = $WATTLOG_SAMPLE_NODES, else every node."""
    agent: AgentConfig = field(default_factory=AgentConfig)
    """The agent's settings (its host is taken from the job identity when left as the hostname)."""
    project: str = "default"
    """Project of the run, if this node creates it."""
    site: str = ""
    """Site of the run, if this node creates it."""
    model: str = ""
    """Model of the run, if this node creates it."""
    simulate_gpus: int = 0
    """Add this many simulated GPUs (labelled simulated) to the node's devices."""
    simulate_load: float = 1.0
    """Scale of the simulated GPUs' training power (unequal nodes in benches and tests)."""
    lease_s: float | None = None
    """Seconds each flush holds the node's lease; None = three flushes, at least a minute."""
    machine_id: str | None = None
    """This machine's id beside the host name; None reads /etc/machine-id (else a stable fallback)."""

    def __post_init__(self) -> None:
        if not self.run.strip():
            raise ConfigError("a node needs the run's name: pass --run (the same on every node)")
        if self.simulate_gpus < 0 or not self.simulate_load > 0:
            raise ConfigError("simulate_gpus must be >= 0 and simulate_load > 0")
        if self.lease_s is not None and not self.lease_s >= self.agent.flush_s:
            raise ConfigError(
                f"the lease ({self.lease_s} s) must hold at least one flush ({self.agent.flush_s} s)"
            )


class NodeAgent:
    """Join the run and (unless sampled out) measure this node into the shared ledger.

    Args:
        options: Settings.
        environ: The environment that holds SLURM / torchrun variables.
        sensors: Sensors for the agent; None discovers the node's (plus simulated GPUs if asked).
    """

    def __init__(
        self, options: NodeOptions, environ: Mapping[str, str], sensors: list[Sensor] | None = None
    ) -> None:
        self.options = options
        self.job: JobIdentity = job_identity(environ, host=options.agent.host)
        self.sample_nodes = sample_nodes_from(environ, options.sample_nodes)
        self.measured = self.job.measured(self.sample_nodes)
        self.agent: Agent | None = None
        self.run_id: int | None = None
        self.ledger: Ledger | None = None
        self.recording: Recording | None = None
        self.offline: LedgerUnavailable | None = None
        """Why the ledger was unreachable at start (the node is then measured into the spool only)."""
        self.holder = NodeHolder.for_agent(self.job, self.measured, options.machine_id)
        self._sensors = sensors
        self._environ = environ

    def start(self) -> NodeAgent:
        """Open the ledger, join the run, start the agent when this node measures.

        A ledger unreachable at start (down, its connections used up) does not stop the node: it
        measures into the spool under the run's name (a ``start`` line registers the run), and
        the first flush that reaches the ledger, the close or `wattlog replay` stores it once.

        Raises:
            LedgerError: The ledger cannot be used (a wrong URL, a damaged ledger).
            WattlogError: The agent cannot start.
        """
        o = self.options
        try:
            self._join()
        except LedgerUnavailable as error:
            self.offline = error
            self.ledger = Ledger(unconnected_engine(o.db))
        if self.measured:
            # The run's name on every series: queries by `run` hold whether Prometheus takes it from
            # the agent (honor_labels) or from a target label of the same value.
            config = dataclasses.replace(o.agent, host=self.job.host, run=o.run)
            # The same durability as `wattlog run`: a ledger outage spools the rows, it never drops them.
            assert self.ledger is not None
            self.recording = Recording(
                RecordingConfig(config, lease_s=o.lease_s),
                LedgerTarget(self.ledger, self.run_id or o.run, o.db, self.holder),
                sensors=self._sensors,
                extra_sensors=self._simulated(),
                environ=self._environ,
            )
            self.agent = self.recording.start().agent
            if self.offline is not None:
                self._spool_start(self.offline)
        return self

    def _join(self) -> None:
        """Open the ledger and join the run (raises LedgerUnavailable when the ledger cannot be reached)."""
        o = self.options
        # an agent writes a few milliseconds every flush: holding a connection between flushes
        # would make node 98 of a job fail on PostgreSQL's default 100 slots
        self.ledger = Ledger(make_engine(o.db, connections=Connections.from_env(self._environ, hold=False)))
        run = join_run(
            self.ledger,
            o.run,
            self.job,
            measured=self.measured,
            project=o.project,
            site=o.site,
            model=o.model,
            machine_id=self.holder.machine_id,
            site_figures=self._site_figures(),
        )
        self.run_id = cast(int, run.id)

    def _site_figures(self) -> dict[str, Any] | None:
        """The run's site figures as the catalog gives them at its start (None without a site)."""
        from wattlog.accounting.carbon.run_sites import figures_for
        from wattlog.accounting.carbon.sites import run_catalog

        assert self.ledger is not None
        try:
            return figures_for(self.options.site, run_catalog(self._environ), self.ledger.wall_s())
        except ConfigError as error:  # measuring goes on: the table names the site's problem later
            log.warning("site figures not stored with run %s: %s", self.options.run, error)
            return None

    def _spool_start(self, error: LedgerUnavailable) -> None:
        """Spool the run's registration (whichever node's replay comes first creates it), and say so."""
        spool = self.recording.spool if self.recording is not None else None
        assert spool is not None and self.ledger is not None
        o = self.options
        start = {"project": o.project, "site": o.site, "model": o.model, "host": self.job.host}
        figures = self._site_figures()
        spool.append_start(o.run, {**start, "start_s": self.ledger.wall_s(), "site_figures": figures})
        log.error(
            "the ledger is unreachable at start (%s): node %s of run %s is measured into %s and stored when "
            "the ledger is back (at a later flush, at the end, or by `wattlog replay`)",
            error,
            self.job.host,
            o.run,
            spool.path,
            extra=LEDGER_OUTAGE,
        )

    def describe(self) -> str:
        """One line: the node, its place in the job, and whether it measures."""
        place = f"node {self.job.node_index + 1} of {self.job.node_count}"
        if self.job.job_id:
            place += f" of job {self.job.job_id}"
        if not self.measured:
            unjoined = "; the ledger is unreachable: not joined" if self.offline is not None else ""
            sampled = f"sampled out ({self.sample_nodes} nodes measure), steps only"
            return f"{self.job.host}: {place}; {sampled}{unjoined}"
        url = self.agent.metrics_url if self.agent is not None else None
        offline = "; the ledger is unreachable: measuring into the spool" if self.offline is not None else ""
        return f"{self.job.host}: {place}; measuring, metrics at {url or '(not served)'}{offline}"

    @property
    def unwritten_rows(self) -> int:
        """Energy rows measured that are not in the ledger (spooled for `wattlog replay`, or lost)."""
        return self.recording.unwritten_rows if self.recording is not None else 0

    def completeness(self) -> Completeness:
        """What this node measured that is not in the ledger (nothing for a node sampled out)."""
        return self.recording.completeness() if self.recording is not None else Completeness()

    def close(self) -> None:
        """Stop the agent (its last flush goes to the ledger, or to the spool) and release the ledger."""
        if self.recording is not None:
            self.recording.close()
        if self.ledger is not None and self.options.site and self.job.node_index == 0:
            self._fetch_intensity(self.ledger)  # one node fetches: a 1,000-node job asks the provider once
        if self.ledger is not None:
            self.ledger.engine.dispose()

    def _fetch_intensity(self, ledger: Ledger) -> None:
        """Fetch the run's hours so far from its site's provider, if it names one (one line if not)."""
        from wattlog.accounting.carbon.intensity.live.at_close import fetch_at_close
        from wattlog.accounting.carbon.intensity.live.providers import ProviderContext
        from wattlog.accounting.carbon.sites import run_catalog

        done = fetch_at_close(
            ledger, self.options.run, run_catalog(self._environ), ProviderContext(environ=self._environ)
        )
        if done is not None:
            (log.info if done.ok else log.warning)("%s", done.line)

    def _simulated(self) -> list[Sensor]:
        o = self.options
        if not o.simulate_gpus:
            return []
        from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
        from wattlog.telemetry.sensors.traces import TrainingTrace

        def trace(i: int) -> TrainingTrace:
            seed = self.job.node_index * 1000 + i
            load = o.simulate_load
            return TrainingTrace.generate(seed, 600.0, compute_w=650.0 * load, comm_w=350.0 * load)

        return [SimulatedSensor(simulated_gpus(o.simulate_gpus, trace, t0_s=time.monotonic()))]
