"""The Prometheus exporter: collectors over the agent's snapshots, the server (metrics_server), Pushgateway.

Scrapes never touch hardware (STYLE #12): each collector calls a snapshot
function the agent hands it and yields fresh metric families from what it
returns. Each agent builds its own :class:`~prometheus_client.CollectorRegistry`;
nothing here registers into the global one.

Energy is always a counter in joules, so `increase()` over any window is exact
whatever the scrape interval. Labels are bounded: host, device (UUID), kind,
source, and a fixed `bound` or `stat`; never a step or a timestamp.

Every series also carries `run`, the label the agent itself exports (empty, so
absent in Prometheus, for a plain agent measuring no run). Runs are thus told
apart by what the agent says, never by its scrape target's port: a later run
that reuses a port cannot be mixed into an earlier one (use `honor_labels: true`
in the scrape config so Prometheus keeps the agent's value).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, delete_from_gateway, push_to_gateway
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from wattlog.errors import UntrustedInput, WattlogError
from wattlog.http_exchange import Bounds, exchange
from wattlog.metric_names import MetricName
from wattlog.telemetry.metrics_server import MetricsServer as MetricsServer
from wattlog.telemetry.metrics_server import serve as serve
from wattlog.telemetry.private import hide_password
from wattlog.telemetry.types import DeviceEnergy

_PUSH_ANSWER_BYTES = 1 << 20  # the Pushgateway answers nothing, or one line of error

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from wattlog.telemetry.sampler import SamplerStats

log = logging.getLogger(__name__)

DEVICE_LABELS = ["host", "device", "kind", "source", "run"]
AGENT_LABELS = ["host", "run"]
POWER_HELP = "Latest power reading of the device (none once it is lost: its series ends)."
BOUNDS = ("low", "high", "random_low", "random_high")
"""Values of the band's `bound` label: its two ends, and their parts that are sampling error (summed over
devices in quadrature, as the ledger sums rows: wattlog.records.summed_band)."""


class EnergyCollector(Collector):
    """Per-device energy, power, gaps and loss, read from the integrator's snapshot.

    Emits (one sample per device; labels host, device, kind, source, run)::

        # HELP wattlog_energy_joules_total Energy used by the device since the agent started (best estimate).
        # TYPE wattlog_energy_joules_total counter
        # HELP wattlog_energy_uncertainty_joules Ends of the energy's band (bound=low|high) and their
        #   sampling-error parts (bound=random_low|random_high).
        # TYPE wattlog_energy_uncertainty_joules gauge
        # HELP wattlog_power_watts Latest power reading of the device (none once it is lost: its series ends).
        # TYPE wattlog_power_watts gauge
        # HELP wattlog_power_limit_watts Enforced power limit of the device (where known).
        # TYPE wattlog_power_limit_watts gauge
        # HELP wattlog_device_samples_total Readings integrated for the device.
        # TYPE wattlog_device_samples_total counter
        # HELP wattlog_gaps_total Gaps recorded for the device (failed reads, lost device, late readings).
        # TYPE wattlog_gaps_total counter
        # HELP wattlog_gap_seconds_total Seconds inside the device's gaps (not interpolated over).
        # TYPE wattlog_gap_seconds_total counter
        # HELP wattlog_device_lost 1 if the device was marked lost, else 0.
        # TYPE wattlog_device_lost gauge
        # HELP wattlog_device_info Device name and counter availability (value always 1).
        # TYPE wattlog_device_info gauge

    Args:
        snapshot: Returns the latest cumulative energy per device (no hardware access).
        host: Value of the `host` label.
        run: Value of the `run` label ("" for a plain agent measuring no run).
    """

    def __init__(self, snapshot: Callable[[], Sequence[DeviceEnergy]], host: str, run: str = "") -> None:
        self._snapshot = snapshot
        self._host = host
        self._run = run

    def collect(self) -> Iterator[Metric]:
        """Yield fresh metric families built from one snapshot."""
        energy = CounterMetricFamily(
            MetricName.ENERGY_JOULES_TOTAL,
            "Energy used by the device since the agent started (best estimate).",
            labels=DEVICE_LABELS,
            unit="joules",
        )
        band = GaugeMetricFamily(
            MetricName.ENERGY_UNCERTAINTY_JOULES,
            "Ends of the energy's band (bound=low|high) and their sampling-error parts "
            "(bound=random_low|random_high).",
            labels=[*DEVICE_LABELS, "bound"],
        )
        power = GaugeMetricFamily(MetricName.POWER_WATTS, POWER_HELP, labels=DEVICE_LABELS)
        power_limit = GaugeMetricFamily(
            MetricName.POWER_LIMIT_WATTS,
            "Enforced power limit of the device (where known).",
            labels=DEVICE_LABELS,
        )
        samples = CounterMetricFamily(
            MetricName.DEVICE_SAMPLES_TOTAL, "Readings integrated for the device.", labels=DEVICE_LABELS
        )
        gaps = CounterMetricFamily(
            MetricName.GAPS_TOTAL,
            "Gaps recorded for the device (failed reads, lost device, late readings).",
            labels=DEVICE_LABELS,
        )
        gap_seconds = CounterMetricFamily(
            MetricName.GAP_SECONDS_TOTAL,
            "Seconds inside the device's gaps (not interpolated over).",
            labels=DEVICE_LABELS,
        )
        lost = GaugeMetricFamily(
            MetricName.DEVICE_LOST, "1 if the device was marked lost, else 0.", labels=DEVICE_LABELS
        )
        info = GaugeMetricFamily(
            MetricName.DEVICE_INFO,
            "Device name and counter availability (value always 1).",
            labels=[*DEVICE_LABELS, "name", "has_counter"],
        )
        for row in self._snapshot():
            d = row.device
            labels = [self._host, d.uuid, str(d.kind), str(d.source), self._run]
            energy.add_metric(labels, row.energy_j)
            ends = (row.low_j, row.high_j, row.random_low_j, row.random_high_j)  # as BOUNDS names them
            for bound, value in zip(BOUNDS, ends, strict=True):
                band.add_metric([*labels, bound], value)
            if row.power_w is not None and not row.lost:  # a lost device's series ends; `lost` says why
                power.add_metric(labels, row.power_w)
            if d.power_limit_w is not None:
                power_limit.add_metric(labels, d.power_limit_w)
            samples.add_metric(labels, row.samples)
            gaps.add_metric(labels, row.gap_count)
            gap_seconds.add_metric(labels, row.gap_s)
            lost.add_metric(labels, 1.0 if row.lost else 0.0)
            info.add_metric([*labels, d.name, "true" if d.has_counter else "false"], 1.0)
        yield from (energy, band, power, power_limit, samples, gaps, gap_seconds, lost, info)


class SamplerCollector(Collector):
    """The sampler's own health, kept apart from device metrics (labels host, run).

    Emits::

        # HELP wattlog_samples_total Sampler ticks completed.
        # TYPE wattlog_samples_total counter
        # HELP wattlog_sensor_reads_total Device reads attempted.
        # TYPE wattlog_sensor_reads_total counter
        # HELP wattlog_sample_errors_total Device reads that failed (each one recorded as a gap).
        # TYPE wattlog_sample_errors_total counter
        # HELP wattlog_sample_overruns_total Ticks that started after their next deadline had passed.
        # TYPE wattlog_sample_overruns_total counter
        # HELP wattlog_sample_period_seconds Achieved mean sampling period.
        # TYPE wattlog_sample_period_seconds gauge
        # HELP wattlog_sample_lateness_seconds Lateness of ticks behind their deadline (stat=p50|p99|max).
        # TYPE wattlog_sample_lateness_seconds gauge
        # HELP wattlog_sampler_running 1 while the sampler thread runs.
        # TYPE wattlog_sampler_running gauge
        # HELP wattlog_sampler_cpu_seconds_total CPU time used by the sampler thread.
        # TYPE wattlog_sampler_cpu_seconds_total counter

    Args:
        stats: Returns the sampler's current statistics.
        host: Value of the `host` label.
        run: Value of the `run` label ("" for a plain agent measuring no run).
    """

    def __init__(self, stats: Callable[[], SamplerStats], host: str, run: str = "") -> None:
        self._stats = stats
        self._host = host
        self._run = run

    def collect(self) -> Iterator[Metric]:
        """Yield fresh metric families built from one stats read."""
        s = self._stats()
        h = [self._host, self._run]

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            family = CounterMetricFamily(name, doc, labels=AGENT_LABELS)
            family.add_metric(h, value)
            return family

        yield counter(MetricName.SAMPLES_TOTAL, "Sampler ticks completed.", s.samples_total)
        yield counter(MetricName.SENSOR_READS_TOTAL, "Device reads attempted.", s.reads_total)
        yield counter(
            MetricName.SAMPLE_ERRORS_TOTAL,
            "Device reads that failed (each one recorded as a gap).",
            s.errors_total,
        )
        yield counter(
            MetricName.SAMPLE_OVERRUNS_TOTAL,
            "Ticks that started after their next deadline had passed.",
            s.overruns_total,
        )
        period = GaugeMetricFamily(
            MetricName.SAMPLE_PERIOD_SECONDS, "Achieved mean sampling period.", labels=AGENT_LABELS
        )
        if s.achieved_period_s is not None:
            period.add_metric(h, s.achieved_period_s)
        yield period
        lateness = GaugeMetricFamily(
            MetricName.SAMPLE_LATENESS_SECONDS,
            "Lateness of ticks behind their deadline (stat=p50|p99|max).",
            labels=[*AGENT_LABELS, "stat"],
        )
        for stat, value in (("p50", s.lateness_p50_s), ("p99", s.lateness_p99_s), ("max", s.lateness_max_s)):
            if value is not None:
                lateness.add_metric([*h, stat], value)
        yield lateness
        running = GaugeMetricFamily(
            MetricName.SAMPLER_RUNNING, "1 while the sampler thread runs.", labels=AGENT_LABELS
        )
        running.add_metric(h, 1.0 if s.running else 0.0)
        yield running
        yield counter(
            MetricName.SAMPLER_CPU_SECONDS_TOTAL, "CPU time used by the sampler thread.", s.thread_cpu_s
        )


class AgentStateCollector(Collector):
    """Whether the agent ended normally, so that its target going down afterwards is no alert.

    Emits (labels host, run)::

        # HELP wattlog_agent_finished 1 once the agent has ended normally (its target going down is expected).
        # TYPE wattlog_agent_finished gauge

    It also notes when a scrape's response has been written (:meth:`written`, called by the server
    :func:`serve` starts), so that closing can wait for the next regular scrape to read the finished
    mark (:meth:`wait_scraped`), and not wait at all when nobody scrapes regularly. Collecting alone
    (a Pushgateway push, a scrape whose client went away) does not count: only a response written.

    Args:
        host: Value of the `host` label.
        run: Value of the `run` label.
        clock: Monotonic seconds (injected by tests).
    """

    def __init__(self, host: str, run: str = "", clock: Callable[[], float] = time.monotonic) -> None:
        self._labels = [host, run]
        self._clock = clock
        self._finished = threading.Event()
        self._seen_finished = threading.Event()
        self._scrapes: list[float] = []
        self._collected = threading.local()  # per worker thread: this scrape collected the finished mark

    def finish(self) -> None:
        """Mark the normal end; the next scrape reports 1."""
        self._finished.set()

    def wait_scraped(self, timeout_s: float) -> bool:
        """Wait until a scrape has read the finished mark; True if one did.

        Waits at most 1.5 of the last interval between scrapes (plus 0.5 s) and at most
        `timeout_s`; without two scrapes seen yet (nothing scrapes regularly) it does not wait.
        """
        if self._seen_finished.is_set():
            return True
        if len(self._scrapes) < 2:
            return False
        interval_s = self._scrapes[-1] - self._scrapes[-2]
        return self._seen_finished.wait(min(timeout_s, 1.5 * interval_s + 0.5))

    def written(self) -> None:
        """Note that a scrape's response was written in full (called from the serving thread)."""
        self._scrapes = [*self._scrapes[-1:], self._clock()]
        if getattr(self._collected, "finished", False):
            self._collected.finished = False
            self._seen_finished.set()

    def collect(self) -> Iterator[Metric]:
        """Yield the finished gauge (and note, for :meth:`written`, that it was set)."""
        finished = self._finished.is_set()
        family = GaugeMetricFamily(
            MetricName.AGENT_FINISHED,
            "1 once the agent has ended normally (its target going down is expected).",
            labels=AGENT_LABELS,
        )
        family.add_metric(self._labels, 1.0 if finished else 0.0)
        self._collected.finished = finished
        yield family


def push(
    registry: CollectorRegistry,
    gateway_url: str,
    job: str,
    grouping_key: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
) -> None:
    """Push the registry's current values to a Pushgateway (for short jobs that cannot be scraped).

    The Pushgateway never forgets a series: once the pushed values have been
    scraped for the last time, call :func:`delete` with the same job and
    grouping key, or the last values stay exported forever.

    Args:
        registry: The agent's registry.
        gateway_url: e.g. http://127.0.0.1:9091.
        job: The `job` label of the group.
        grouping_key: Further labels naming the group (e.g. {"instance": host}).
        timeout_s: HTTP timeout.

    Raises:
        WattlogError: The gateway could not be reached or refused the push.
    """
    try:
        push_to_gateway(
            gateway_url,
            job=job,
            registry=registry,
            grouping_key=dict(grouping_key or {}),
            timeout=timeout_s,
            handler=_bounded_handler,
        )
    except (OSError, UntrustedInput) as error:
        where, why = hide_password(gateway_url), hide_password(str(error))  # never print its credentials
        raise WattlogError(
            f"cannot push metrics to {where}: {why}; check the Pushgateway runs and the URL (--push)"
        ) from error


def delete(
    gateway_url: str, job: str, grouping_key: Mapping[str, str] | None = None, timeout_s: float = 10.0
) -> None:
    """Delete a pushed group from the Pushgateway (call when the job is done and its values were scraped).

    Args:
        gateway_url: e.g. http://127.0.0.1:9091.
        job: The `job` label used by :func:`push`.
        grouping_key: The grouping key used by :func:`push`.
        timeout_s: HTTP timeout.

    Raises:
        WattlogError: The gateway could not be reached.
    """
    try:
        delete_from_gateway(
            gateway_url,
            job=job,
            grouping_key=dict(grouping_key or {}),
            timeout=timeout_s,
            handler=_bounded_handler,
        )
    except (OSError, UntrustedInput) as error:
        where, why = hide_password(gateway_url), hide_password(str(error))
        raise WattlogError(f"cannot delete group {job} from {where}: {why}") from error


def _bounded_handler(
    url: str, method: str, timeout: float | None, headers: list[tuple[str, str]], data: bytes
) -> Callable[[], None]:
    """prometheus_client's push handler, with the whole answer bounded (its default bounds each read)."""

    def handle() -> None:
        bounds = Bounds(timeout or 10.0, _PUSH_ANSWER_BYTES)
        answer = exchange(method, url, headers=headers, body=data, bounds=bounds, source=hide_password(url))
        if answer.status >= 400:
            raise OSError(f"error talking to pushgateway: {answer.status} {answer.reason}")

    return handle
