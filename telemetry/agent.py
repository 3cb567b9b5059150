"""The node agent: the one place that composes sensors, sampler, integrator, exporter and sinks.

What a node runs (inside the trainer or as the `wattlog agent` sidecar)::

    with Agent(AgentConfig(port=0), sinks=[ledger]) as agent:
        ...                      # sampled every 25 ms in a background thread
        agent.snapshot()         # cumulative energy per device, with its source label

`start()` discovers the job's devices, locks each one (a device another agent
already measures is skipped and named in `notes`), takes a first reading (so
energy counts from start(), not from the first tick), starts the sampler thread,
a flush thread that hands each interval's energy to the sinks, and the
metrics server. `close()` first stops the sampler and takes a final reading,
extending every device's energy to that moment, before anything else shuts
down (the metrics server's shutdown alone can take 0.5 s); then it marks the
normal end (`wattlog_agent_finished`), flushes the last interval, releases the
locks and, when served, lingers until the next scrape has read the final
counters and the mark (`AgentConfig.linger_s`). `window(name)` measures a named stretch
(see telemetry.windows). The constructor does no I/O.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType

from prometheus_client import CollectorRegistry
from prometheus_client.registry import Collector

from wattlog.clock import Clock, SystemClock
from wattlog.errors import WattlogError
from wattlog.records import BandRevision, EnergyInterval, Gap, Source
from wattlog.telemetry.agent_config import LOCK_DIR_ENV, AgentConfig, default_lock_dir
from wattlog.telemetry.devicelock import DeviceLocks
from wattlog.telemetry.exporter import (
    AgentStateCollector,
    EnergyCollector,
    MetricsServer,
    SamplerCollector,
    push,
    serve,
)
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.locked_sensor import OnlyDevices
from wattlog.telemetry.sampler import Sampler, SamplerStats
from wattlog.telemetry.selection import job_selection
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.discovery import DiscoveryConfig, discover
from wattlog.telemetry.sinks import (
    IntervalSink,
    RevisionSink,
    SinkCollector,
    SinkStats,
    WindowSink,
    bound_pending,
    hand_over,
    write_or_reject,
)
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo
from wattlog.telemetry.windows import Window, Windows

logger = logging.getLogger(__name__)

__all__ = ["LOCK_DIR_ENV", "Agent", "AgentConfig", "default_lock_dir"]


class Agent:
    """A node's measuring agent; use as a context manager or call start() and close().

    Args:
        config: Settings.
        sensors: Backends to read; None discovers the machine's (NVML, powercap, estimate).
            Sensors passed in are closed by the agent at close(), like discovered ones.
        extra_sensors: Added to the discovered ones (e.g. simulated GPUs); ignored when `sensors` is given.
        sinks: Receive each flush interval's energy rows and gaps (the ledger, a file).
        clock: Time source for the sampler and integrator.
        registry: Registry to publish into; None creates the agent's own.
        environ: Environment used to select the job's GPUs (default: os.environ).
    """

    def __init__(
        self,
        config: AgentConfig | None = None,
        *,
        sensors: Sequence[Sensor] | None = None,
        extra_sensors: Sequence[Sensor] = (),
        sinks: Sequence[IntervalSink] = (),
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config if config is not None else AgentConfig()
        self._given_sensors = list(sensors) if sensors is not None else None
        self._extra_sensors = list(extra_sensors)
        self._sinks = list(sinks)
        self._pending: list[tuple[list[EnergyInterval], list[Gap]]] = [([], []) for _ in self._sinks]
        self._pending_windows: list[list[EnergyInterval]] = [[] for _ in self._sinks]
        self._pending_revisions: list[list[BandRevision]] = [[] for _ in self._sinks]
        self._clock = clock if clock is not None else SystemClock()
        self.registry = registry if registry is not None else CollectorRegistry()
        self._environ = environ
        self._notes: list[str] = []
        self._held_elsewhere: dict[str, str | None] = {}
        self._sensors: list[Sensor] = []
        self._locks = DeviceLocks(self.config.lock_dir)
        self._integrator: Integrator | None = None
        self._sampler: Sampler | None = None
        self._running = False
        self._devices: list[DeviceInfo] = []
        self._server: MetricsServer | None = None
        self._flush_lock = threading.Lock()
        self._stop_flush = threading.Event()
        self._flush_thread: threading.Thread | None = None
        self.stuck_threads: list[str] = []
        """Threads close() found still running after their timeout (named in a warning)."""
        self._collectors: list[Collector] = []
        self._state = AgentStateCollector(self.config.host, self.config.run)
        self.sink_stats = SinkStats()
        """Rows the sinks took, refused as invalid, or dropped, and their failures (exported as counters)."""
        self._windows: Windows | None = None

    @property
    def metrics_url(self) -> str | None:
        """Where metrics are served (None before start() or when port is None)."""
        return self._server.url if self._server is not None else None

    @property
    def notes(self) -> list[str]:
        """Plain-language notes from discovery and locking (skipped devices, fallbacks)."""
        return list(self._notes)

    @property
    def held_elsewhere(self) -> dict[str, str | None]:
        """Devices skipped because another agent measures them: UUID -> that agent's metrics URL."""
        return dict(self._held_elsewhere)

    @property
    def devices(self) -> list[DeviceInfo]:
        """The devices this agent measures (those it locked)."""
        return list(self._devices)

    def start(self) -> Agent:
        """Discover, lock, and start sampling, flushing and serving; returns self.

        Raises:
            WattlogError: Already started, the port is taken, or no sensor can be set up.
        """
        if self._running:
            raise WattlogError("the agent is already running; close() it before starting again")
        self._stop_serving()  # a close(linger=False) not followed by linger()
        cfg = self.config
        try:
            if cfg.port is not None:
                self._server = serve(self.registry, cfg.listen_host, cfg.port, written=self._state.written)
            candidates = self._discover()
            devices = self._devices = self._lock(candidates)
            self._notes.extend(self._locks.notes)  # a planted lock folder, replaced by a fresh one
            self._integrator = Integrator(devices, host=cfg.host, clock=self._clock, period_s=cfg.period_s)
            self._sampler = Sampler(self._sensors, self._integrator, period_s=cfg.period_s, clock=self._clock)
            self._windows = Windows(self._integrator, self._clock, cfg.host)
            self._sampler.edge()  # the first reading: energy counts from here
        except BaseException:
            self._shutdown()
            self._stop_serving()
            raise
        self._collectors = [
            EnergyCollector(self.snapshot, cfg.host, cfg.run),
            SamplerCollector(self._sampler.stats, cfg.host, cfg.run),
            SinkCollector(self.sink_stats, cfg.host, cfg.run),
            self._state,
        ]
        for collector in self._collectors:
            self.registry.register(collector)
        self._sampler.start()
        self._running = True
        self._stop_flush.clear()
        self._flush_thread = threading.Thread(target=self._flush_loop, name="wattlog-flush", daemon=True)
        self._flush_thread.start()
        return self

    @contextmanager
    def window(self, name: str, *, sync: Callable[[], object] | None = None) -> Iterator[Window]:
        """Measure the energy of the block inside, per device; nestable, no device sync unless asked.

        Args:
            name: What the window is ("eval", "epoch-3"); windows land in the sinks at the next flush.
            sync: Called at both edges before reading, e.g. torch.cuda.synchronize, so queued
                device work is counted in the window it was issued in. None: no sync.

        Yields:
            The window; its energy_j, band and per-device rows are filled in when the block ends.

        Raises:
            WattlogError: The agent is not running.
        """
        if self._windows is None or not self._running:
            raise WattlogError("the agent is not running: start() it before opening a window")
        windows = self._windows
        opened = windows.begin(name, sync)
        try:
            yield opened
        finally:
            windows.end(opened, sync)

    def snapshot(self) -> list[DeviceEnergy]:
        """Cumulative energy per measured device (empty before start())."""
        return self._integrator.snapshot() if self._integrator is not None else []

    def stats(self) -> SamplerStats | None:
        """The sampler's health (None before start())."""
        return self._sampler.stats() if self._sampler is not None else None

    def flush(self) -> None:
        """Hand the intervals integrated since the last flush to every sink (and push, if configured).

        A sink that raises keeps its rows and gets them again, with the next ones, at the next flush.
        """
        with self._flush_lock:
            if self._integrator is None:
                return
            intervals, gaps = self._integrator.take_intervals()
            windows = self._windows.take(final=not self._running) if self._windows is not None else []
            revisions = self._integrator.take_revisions()  # earlier rows' band, after what was learned
            for i, sink in enumerate(self._sinks):
                if windows and isinstance(sink, WindowSink):
                    self._pending_windows[i].extend(windows)
                if revisions and isinstance(sink, RevisionSink):
                    self._pending_revisions[i].extend(revisions)
                pending_rows, pending_gaps = self._pending[i]
                pending_rows.extend(intervals)
                pending_gaps.extend(gaps)
                try:
                    write_or_reject(sink, pending_rows, pending_gaps, self.sink_stats)
                except Exception:  # a broken sink must not stop measuring: retried next flush
                    self.sink_stats.failures += 1
                    logger.exception(
                        "sink %s failed; its %d rows are kept for the next flush",
                        type(sink).__name__,
                        len(pending_rows),
                    )
                    self.sink_stats.dropped_rows += bound_pending(pending_rows) + bound_pending(pending_gaps)
                else:
                    self._pending[i] = ([], [])
                window_writer = sink.write_windows if isinstance(sink, WindowSink) else None
                self._pending_windows[i] = hand_over(self._pending_windows[i], window_writer, "window rows")
                # a revision follows its rows: written once the sink holds every row it was handed
                revise = (
                    sink.write_revisions
                    if isinstance(sink, RevisionSink) and not self._pending[i][0]
                    else None
                )
                self._pending_revisions[i] = hand_over(self._pending_revisions[i], revise, "band revisions")
            if self.config.pushgateway_url is not None:
                try:
                    push(
                        self.registry,
                        self.config.pushgateway_url,
                        self.config.push_job,
                        {"instance": self.config.host},
                    )
                except WattlogError as error:
                    logger.warning("%s", error)

    @property
    def unwritten_rows(self) -> int:
        """Energy rows not stored by every sink: kept for retry, spooled, or lost (0 when all landed)."""
        kept = sum(len(rows) for rows, _ in self._pending)
        return kept + sum(int(getattr(sink, "unwritten_rows", 0)) for sink in self._sinks)

    def close(self, *, linger: bool = True) -> None:
        """Stop sampling, take a final reading, flush the last interval, release the locks, stop serving.

        The final reading comes first, before anything else shuts down: every device's energy
        then runs to it (the stretch since the last counter update taken from the latest power).
        Then the agent marks its normal end and, when served, lingers until the next regular scrape
        has read that mark with the final counters (at most `linger_s`): the last values Prometheus
        holds are what the sinks stored, and the target going down afterwards is no alert.
        Idempotent; snapshot() and stats() still answer afterwards (the final figures).

        Args:
            linger: False keeps serving the final counters until :meth:`linger` is called, so the
                caller can close its run first (a preemption grace period is short).
        """
        if not self._running:
            if linger:  # after close(linger=False): still serving until this
                self.linger()
            return
        self._running = False
        assert self._sampler is not None and self._integrator is not None
        self._sampler.stop()
        self._integrator.finish(self._sampler.edge())
        self._stop_flush.set()
        self._join_flush_thread()
        self._state.finish()  # before the last flush, so a Pushgateway keeps the mark too
        self.flush()
        for sink in self._sinks:
            try:
                sink.close()
            except Exception:
                logger.exception("closing sink %s failed", type(sink).__name__)
        self._shutdown()
        if linger:
            self.linger()

    def linger(self) -> None:
        """Serve the final counters until a scrape read them (at most `linger_s`), then stop (idempotent)."""
        if self._server is not None and self.config.linger_s > 0:
            self._state.wait_scraped(self.config.linger_s)
        self._stop_serving()

    def __enter__(self) -> Agent:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _discover(self) -> list[tuple[Sensor, list[DeviceInfo]]]:
        """Each sensor with the devices it offers (discovery lists each UUID once)."""
        if self._given_sensors is None:
            # each vendor reads its own visibility (CUDA_, HIP_VISIBLE_DEVICES...); --whole-node overrides all
            chosen = job_selection(whole_node=True) if self.config.whole_node else None
            environ = self._environ if self._environ is not None else os.environ
            config = DiscoveryConfig(chosen, environ=environ, extra=self._extra_sensors, clock=self._clock)
            config.hwmon_root = self.config.hwmon_root
            config.slow_period_s = self.config.slow_period_s
            found = discover(config)
            self._notes.extend(found.notes)
            return [(s, [d for owner, d in found.devices if owner is s]) for s in found.sensors]
        groups = []
        for sensor in self._given_sensors:
            try:
                groups.append((sensor, sensor.devices()))
            except Exception as error:  # one broken backend must not stop the others
                self._notes.append(f"{type(sensor).__name__} skipped: {error}")
                sensor.close()
        return groups

    def _lock(self, groups: list[tuple[Sensor, list[DeviceInfo]]]) -> list[DeviceInfo]:
        """Lock each sensor's devices; keep only what this agent locked.

        Simulated devices live inside this process, so they are never shared and not locked.
        """
        url = self.metrics_url
        measured: list[DeviceInfo] = []
        for sensor, offered in groups:
            mine = []
            for device in offered:
                shared = device.source is not Source.SIMULATED
                holder = self._locks.acquire(device.uuid, url) if shared else None
                if holder is None:
                    mine.append(device)
                else:
                    # an untrusted holder's figures are never read; the device stays out of this run
                    self._held_elsewhere[device.uuid] = holder.metrics_url if holder.trusted else None
                    self._notes.append(holder.describe(device.uuid))
            if mine:
                self._sensors.append(OnlyDevices(sensor, mine))
                measured.extend(mine)
            else:
                sensor.close()
        return measured

    def _join_flush_thread(self) -> None:
        """Wait for the flush thread to stop; one still in a sink write after the timeout is named."""
        thread, self._flush_thread = self._flush_thread, None
        if thread is None:
            return
        thread.join(self.config.stop_timeout_s)
        if thread.is_alive():  # the last flush below still waits for the write in progress
            self.stuck_threads.append(thread.name)
            logger.warning("thread %s is stuck in a sink write past stop_timeout_s", thread.name)

    def _flush_loop(self) -> None:
        while not self._stop_flush.wait(self.config.flush_s):
            self.flush()

    def _shutdown(self) -> None:
        """Close the sensors and release the device locks (the server still serves the final figures)."""
        for sensor in self._sensors:
            try:
                sensor.close()
            except Exception:
                logger.exception("closing sensor %s failed", type(sensor).__name__)
        self._sensors = []
        self._locks.release_all()

    def _stop_serving(self) -> None:
        for collector in self._collectors:
            self.registry.unregister(collector)
        self._collectors = []
        if self._server is not None:
            self._server.close()
            self._server = None
