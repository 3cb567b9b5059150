"""The one composition root of "agent + durable ledger sink (with its spool) + exporter".

`wattlog run`, the Tracker and the framework callbacks (through
:class:`~wattlog.trainer.session.RunSession`), `wattlog node` and `wattlog agent`
all measure through a :class:`Recording`, so they record with the same durability::

    target = LedgerTarget(ledger, run_id, url)
    with Recording(RecordingConfig(AgentConfig(port=0)), target) as recording:
        ...                                  # sampled, served, flushed into the ledger
    recording.recorded_j, recording.unwritten_rows

With a ledger target the agent's sink is a :class:`LedgerSink` with a
:class:`Spool`: rows the ledger cannot take (down, disk full) wait on local disk
and are replayed at the next flush that reaches it, at close, or by
`wattlog replay`; nothing measured is lost to an outage, and what is not in the
ledger yet is counted (`unwritten_rows`) so every command can say so and exit
non-zero. Without one (a plain `wattlog agent`), only the JSON Lines file, if any.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from prometheus_client.registry import Collector

from wattlog.accounting.ledger.admin import run_deleted
from wattlog.accounting.ledger.completeness import Completeness
from wattlog.accounting.ledger.engine import describe_url
from wattlog.accounting.ledger.identity import LedgerIdentity, guard_identity
from wattlog.accounting.ledger.lease import lease_for, release_lease, renew_lease
from wattlog.accounting.ledger.node_lease import NodeHolder
from wattlog.accounting.ledger.sink import LedgerSink
from wattlog.accounting.ledger.spool import Spool, default_folder
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.publishing.validity import counter_check_payload
from wattlog.clock import Clock
from wattlog.errors import LedgerError, WattlogError
from wattlog.events import EventKind
from wattlog.records import BandRevision, EnergyInterval, Gap
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.otlp import OtlpConfig, OtlpExport
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sinks import IntervalSink, JsonlSink

log = logging.getLogger(__name__)


@dataclass
class RecordingConfig:
    """Where a node's measurements go besides Prometheus."""

    agent: AgentConfig = field(default_factory=AgentConfig)
    """The agent's settings (sampling, flushing, serving)."""
    spool_dir: Path | None = None
    """Folder of the spool files; None = $WATTLOG_SPOOL_DIR, else ~/.local/state/wattlog-spool."""
    jsonl: Path | None = None
    """Also append each flush's rows to this JSON Lines file (None: no file)."""
    otlp: OtlpConfig | None = None
    """Also export energy and power over OTLP/HTTP (None: no OTLP; needs ``wattlog[otlp]``)."""
    lease_s: float | None = None
    """Seconds each flush holds the run's (and node's) lease; None = three flushes, at least a minute."""


@dataclass(frozen=True, slots=True)
class LedgerTarget:
    """The run the measurements belong to.

    Attributes:
        ledger: The open ledger.
        run_id: The run's id in it, or its name (a run the ledger could not register yet: replay creates it).
        url: The ledger URL as given (None: the default); names the spool's ledger, password hidden.
        node: The job node whose own lease the recording holds (`wattlog node`; None: the run's only).
    """

    ledger: Ledger
    run_id: int | str
    url: str | None = None
    node: NodeHolder | None = None


class CountingSink:
    """The ledger sink, counting the joules the ledger holds (a summary compares them to the agent's).

    A write that succeeds may have gone to the spool (ledger down): those joules,
    and the ones the spool's bound dropped, are not counted until a replay stores them.
    Each write also renews the run's lease (`lease_s` from now; None: no lease), so a run
    whose agent dies without ending it is closed as lost by the next reader; with `node`,
    that node's lease too (released at close, so a node that ends early is no gap).
    """

    def __init__(
        self, sink: LedgerSink, lease_s: float | None = None, node: NodeHolder | None = None
    ) -> None:
        self.sink = sink
        self._lease_s = lease_s
        self._node = node
        self._accepted_j = 0.0

    def renew(self) -> None:
        """Renew the run's lease; a ledger that fails now is no error (the next flush renews it)."""
        if self._lease_s is None:
            return
        try:
            renew_lease(self.sink.ledger, self.sink.run, self._lease_s, self._node)
        except LedgerError as error:
            log.debug("lease of run %s not renewed: %s", self.sink.run, error)

    @property
    def spool(self) -> Spool | None:
        """Where the rows the ledger could not take wait."""
        return self.sink.spool

    @property
    def recorded_j(self) -> float:
        """Joules accepted by the sink less those still in its spool or lost past its bound."""
        spool = self.sink.spool
        waiting_j = spool.joules + spool.lost_j if spool is not None else 0.0
        return self._accepted_j - waiting_j

    @property
    def unwritten_rows(self) -> int:
        """Energy rows spooled or lost (the agent adds the ones it keeps for retry)."""
        return self.sink.unwritten_rows

    def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        """Hand the rows to the ledger sink and count their joules once it took them."""
        spooled = self.unwritten_rows
        self.sink.write(intervals, gaps)
        self._accepted_j += sum(row.energy_j for row in intervals)
        if self.unwritten_rows <= spooled:  # spooled rows: the ledger is down, no second try this flush
            self.renew()

    def write_windows(self, windows: Sequence[EnergyInterval]) -> None:
        """Store the windows closed since the last flush."""
        self.sink.write_windows(windows)

    def write_revisions(self, revisions: Sequence[BandRevision]) -> None:
        """Store band revisions of rows the ledger holds (without this the table's band would stay wide)."""
        self.sink.write_revisions(revisions)

    def close(self) -> None:
        """Replay what is spooled (a last try), release the spool and the node's lease."""
        self.sink.close()
        if self._node is None or self.unwritten_rows:  # rows still out: the node's gap is theirs to fill
            return
        try:
            release_lease(self.sink.ledger, self.sink.run, self._node)
        except LedgerError as error:
            log.debug("lease of node %s not released: %s", self._node.job.host, error)


class Recording:
    """A node's agent, its Prometheus exporter and its sinks: the ledger (spooled) and/or a file.

    Args:
        config: Settings.
        target: The run to record into; None records into no ledger.
        sensors: Sensors for the agent; None discovers the machine's.
        extra_sensors: Added to the discovered ones (simulated GPUs).
        collectors: More Prometheus collectors the agent serves (training progress).
        clock: Time source.
        environ: Environment for device selection and the spool folder (default: os.environ).
    """

    def __init__(
        self,
        config: RecordingConfig,
        target: LedgerTarget | None = None,
        *,
        sensors: Sequence[Sensor] | None = None,
        extra_sensors: Sequence[Sensor] = (),
        collectors: Sequence[Collector] = (),
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.target = target
        self._sensors = sensors
        self._extra_sensors = list(extra_sensors)
        self._collectors = list(collectors)
        self._clock = clock
        self._environ = environ
        self.ledger_sink: CountingSink | None = None
        self.agent: Agent | None = None
        self.otlp: OtlpExport | None = None
        self.otlp_ok = True
        """False once an OTLP export that close() made (the last figures) failed."""
        self._checked = False

    def start(self) -> Recording:
        """Open the sinks, start the agent (sampling, flushing, serving) and serve the collectors.

        Raises:
            WattlogError: Already started, or the agent cannot start.
        """
        if self.agent is not None:
            raise WattlogError("the recording is already started; close() it first")
        sinks: list[IntervalSink] = []
        if self.target is not None:
            lease_s = self.config.lease_s or lease_for(self.config.agent.flush_s)
            # a ledger deleted or replaced from now on is an outage: its writes spool, never vanish
            pinned = guard_identity(self.target.ledger.engine).pinned
            sink = LedgerSink(self.target.ledger, self.target.run_id, self._spool(pinned))
            self.ledger_sink = CountingSink(sink, lease_s, self.target.node)
            self.ledger_sink.renew()  # before the first flush: a run killed before it is reaped too
            sinks.append(self.ledger_sink)
        if self.config.jsonl is not None:
            sinks.append(JsonlSink(self.config.jsonl))
        agent = Agent(
            self.config.agent,
            sensors=self._sensors,
            extra_sensors=self._extra_sensors,
            sinks=sinks,
            clock=self._clock,
            environ=self._environ,
        )
        for collector in self._collectors:
            agent.registry.register(collector)
        self.agent = agent.start()
        if self.config.otlp is not None:
            try:
                self.otlp = OtlpExport(
                    agent.snapshot, agent.config.host, agent.config.run, self.config.otlp
                ).start()
            except BaseException:
                agent.close()
                raise
        for note in agent.notes:
            log.info("%s", note)
        return self

    def _spool(self, pinned: LedgerIdentity | None) -> Spool:
        """The run's spool, its room reserved now; its header names the run and the ledger's identity."""
        assert self.target is not None
        folder = self.config.spool_dir or default_folder(self._environ)
        run, name = self.target.run_id, ""
        if isinstance(run, str):
            name = run
        else:
            with contextlib.suppress(LedgerError):  # unknown: replay trusts the id
                found = self.target.ledger.find_run(run)
                name = found.name if found is not None else ""
        key = pinned.key if pinned is not None else None
        return Spool(folder, describe_url(self.target.url), run, run_name=name, ledger_key=key).open()

    def close(self) -> None:
        """Stop the agent: its final reading, last flush and counter checks are stored (idempotent)."""
        if self.agent is not None:
            self.agent.close()
            self.record_counter_checks()
        if self.otlp is not None:  # after the agent: its last export carries the final reading
            self.otlp_ok = self.otlp.close() and self.otlp_ok

    def record_counter_checks(self) -> None:
        """A `counter_check` event per counter device (the validity gate's), once, after the agent closed.

        Spooled while the ledger is down, as the energy rows are.
        """
        agent = self.agent
        if self.target is None or agent is None or self._checked:
            return
        self._checked = True
        for device in agent.snapshot():
            if device.counter_check is None:
                continue
            payload = counter_check_payload(
                agent.config.host, device.device.uuid, *device.counter_check, swapped=device.counter_swapped
            )
            ledger, run = self.target.ledger, self.target.run_id
            try:
                ledger.record_event(run, EventKind.COUNTER_CHECK, payload=payload)
            except LedgerError as e:
                if run_deleted(e, run):  # the run is gone: nothing of it is spooled
                    continue
                if self.spool is None:
                    log.warning("counter check of %s not stored: %s", device.device.uuid, e)
                    continue
                event = {"kind": EventKind.COUNTER_CHECK.value, "payload": payload, "time_s": ledger.wall_s()}
                self.spool.append_event(run, event)

    def __enter__(self) -> Recording:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def spool(self) -> Spool | None:
        """Where the rows the ledger could not take wait (None without a ledger)."""
        return self.ledger_sink.spool if self.ledger_sink is not None else None

    @property
    def recorded_j(self) -> float:
        """Joules measured that are in the ledger (0 without a ledger)."""
        return self.ledger_sink.recorded_j if self.ledger_sink is not None else 0.0

    @property
    def unwritten_rows(self) -> int:
        """Energy rows measured that no sink stored: kept for retry, spooled, or lost; 0 when all landed."""
        return self.agent.unwritten_rows if self.agent is not None else 0

    def completeness(self) -> Completeness:
        """What of the run is not in the ledger: rows, and the start/end, events and revisions spooled."""
        spool = self.spool
        if spool is None:
            return Completeness(self.unwritten_rows, ledger=False)
        done = Completeness(self.unwritten_rows, spool.ends, spool.events, spool.revisions)
        sink = self.ledger_sink.sink if self.ledger_sink is not None else None
        if sink is not None and sink.run_deleted:
            deleted = f"the run was deleted from the ledger while measured: {sink.refused_rows} rows refused"
            return done.with_other(deleted)
        return done

    def describe_ledger(self) -> str | None:
        """One line on the ledger writes (rows, flushes, latency); None without a ledger."""
        return self.ledger_sink.sink.describe() if self.ledger_sink is not None else None
