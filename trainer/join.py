"""Joining the node's agent: energy of devices another agent measures, from its metrics.

When a sidecar (`wattlog agent`) or another run's agent already holds a
device's lock, the tracker's own agent skips it and names the holder and its
metrics URL. The tracker then reads that agent's ``wattlog_energy_joules_total``
(and uncertainty band) at start and at close, and records the difference as
this run's energy of the device: measured once, by the agent that holds it,
with its source label.

When the holder has gone by the time this run closes (another run that ended
first), its counters cannot be read; its flushed rows in the ledger can. The
device's energy over this run's time is then taken from the holder's rows
through its last flush (rows straddling this run's start or end count pro
rata), and the stretch after its last flush is recorded as an "agent down"
gap: nobody measured the device then.

The split between concurrent runs: a CPU package or DRAM counter cannot be
divided by process, so every run sharing such a device is attributed the
device's whole energy over its own time (the holder over its lifetime, each
joining run over its own). Each run's figure is what the node spent while it
ran; a sum over runs that overlapped on one node counts the overlap once per
run, so it is an upper bound of the node's energy.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select
from sqlmodel import col

from wattlog.accounting.ledger import Ledger, Resolution
from wattlog.accounting.ledger.models import EnergyRecord
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.clock import Clock
from wattlog.errors import ConfigError, SensorError
from wattlog.gap_reasons import GapReason
from wattlog.http_body import read_body
from wattlog.http_exchange import open_url
from wattlog.metric_names import MetricName
from wattlog.records import EnergyFigure, EnergyInterval, Gap

log = logging.getLogger(__name__)
_MAX_BYTES = 16 * 2**20  # a node agent's page is kilobytes; more is not an agent's


def read_counters(url: str, devices: Iterable[str], timeout_s: float = 5.0) -> dict[str, EnergyTotal]:
    """Scrape `url` and return the cumulative energy of `devices` it serves (one figure each).

    Raises:
        SensorError: The agent cannot be reached, or serves no parsable metrics or unknown labels.
    """
    wanted = set(devices)
    try:
        deadline = time.monotonic() + timeout_s  # the whole answer: a dripping server is cut there
        with open_url(url, timeout=timeout_s) as response:  # the node agent, on loopback
            text = read_body(response, deadline=deadline, max_bytes=_MAX_BYTES, source=url).decode()
    except (OSError, ValueError) as error:  # unreachable, or not text (UnicodeDecodeError)
        raise SensorError(f"cannot read the node agent's metrics at {url}: {error}") from error
    energy: dict[str, Mapping[str, str]] = {}
    joules: dict[str, float] = {}
    bands: dict[tuple[str, str], float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                device = sample.labels.get("device", "")
                if device not in wanted:
                    continue
                if sample.name == MetricName.ENERGY_JOULES_TOTAL:
                    energy[device] = sample.labels
                    joules[device] = sample.value
                elif sample.name == MetricName.ENERGY_UNCERTAINTY_JOULES:
                    bands[(device, sample.labels.get("bound", ""))] = sample.value
    except (ValueError, TypeError, KeyError, IndexError) as error:  # another process's text: never trusted
        raise SensorError(
            f"the node agent at {url} serves text that is not Prometheus metrics: {error}"
        ) from error
    odd = [v for v in (*joules.values(), *bands.values()) if not (math.isfinite(v) and v >= 0)]
    if odd:
        raise SensorError(f"the node agent at {url} serves energy that is not a finite joule count: {odd[0]}")
    try:
        return {
            device: EnergyTotal.of(
                labels.get("host", ""),
                device,
                labels.get("kind", ""),
                labels.get("source", ""),
                joules[device],
                bands.get((device, "low"), joules[device]),
                bands.get((device, "high"), joules[device]),
            )
            for device, labels in energy.items()
        }
    except ConfigError as error:  # another process's labels: validated, never trusted
        raise SensorError(f"the node agent at {url} serves energy wattlog cannot read: {error}") from error


def intervals_between(
    start: Mapping[str, EnergyTotal], end: Mapping[str, EnergyTotal], start_s: float, end_s: float
) -> list[EnergyInterval]:
    """Ledger rows for the energy each device used between two reads (an agent restart skips it)."""
    rows = []
    for device, last in end.items():
        first = start.get(device)
        if first is None or last.energy_j < first.energy_j:
            continue
        energy = last.energy_j - first.energy_j
        low = min(energy, max(0.0, last.low_j - first.low_j))
        high = max(energy, last.high_j - first.high_j)
        figure = EnergyFigure(last.figure.kind, last.figure.source, energy, low, high)
        rows.append(EnergyInterval(last.host, device, start_s, end_s, figure))
    return rows


class JoinedAgents:
    """The other agents of the node whose devices this run uses: read at start, recorded at close.

    Args:
        clock: Wall-clock source for the interval's ends.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._start: dict[str, dict[str, EnergyTotal]] = {}
        self._start_s = 0.0

    def __bool__(self) -> bool:
        """Whether any other agent's devices are joined."""
        return bool(self._start)

    def start(self, held_elsewhere: Mapping[str, str | None]) -> None:
        """Read the counters of every device another agent holds (UUID -> its metrics URL).

        A holder that serves no metrics cannot be read: its devices stay out of this run.
        """
        self._start_s = self._clock.wall()
        grouped: dict[str, list[str]] = {}
        for uuid, url in held_elsewhere.items():
            if url is not None:
                grouped.setdefault(url, []).append(uuid)
        for url, uuids in grouped.items():
            try:
                self._start[url] = read_counters(url, uuids)
            except SensorError as error:
                log.warning("%s; that agent's devices are not in this run", error)

    def record(self, ledger: Ledger, run_id: int) -> None:
        """Store each joined device's energy since start() as one ledger row.

        A holder that can no longer be read is replaced by its flushed rows in the ledger.
        """
        end_s = self._clock.wall()
        for url, start in self._start.items():
            gaps: list[Gap] = []
            try:
                rows = intervals_between(start, read_counters(url, start), self._start_s, end_s)
            except SensorError as error:
                log.warning("%s; taking those devices' energy from the holder's rows in the ledger", error)
                rows, gaps = from_holder_rows(ledger, run_id, start.values(), self._start_s, end_s)
            if rows or gaps:
                ledger.record_intervals(run_id, rows, gaps)


def from_holder_rows(
    ledger: Ledger, run_id: int, devices: Iterable[EnergyTotal], start_s: float, end_s: float
) -> tuple[list[EnergyInterval], list[Gap]]:
    """Energy of each device over [start_s, end_s] from the rows its holder flushed (other runs).

    Returns:
        One row per device (pro rata at the edges) and an "agent down" gap after its last flush.
    """
    rows: list[EnergyInterval] = []
    gaps: list[Gap] = []
    for device in devices:
        found = _holder_rows(ledger, run_id, device, start_s, end_s)
        energy = low = high = 0.0
        covered_to = start_s
        for row_start, row_end, joules, lo, hi in found:
            span = row_end - row_start
            share = (min(row_end, end_s) - max(row_start, start_s)) / span if span > 0 else 1.0
            energy, low, high = energy + joules * share, low + lo * share, high + hi * share
            covered_to = max(covered_to, min(row_end, end_s))
        if found:
            kind, source = device.figure.kind, device.figure.source
            figure = EnergyFigure(kind, source, energy, min(low, energy), max(high, energy))
            rows.append(EnergyInterval(device.host, device.device, start_s, covered_to, figure))
        if covered_to < end_s:
            reason = GapReason.AGENT_DOWN.recorded(
                "the agent measuring this device stopped; not measured after its last flush"
            )
            gaps.append(Gap(device.host, device.device, covered_to, end_s, reason))
    return rows, gaps


def _holder_rows(
    ledger: Ledger, run_id: int, device: EnergyTotal, start_s: float, end_s: float
) -> list[tuple[float, float, float, float, float]]:
    e = EnergyRecord
    query = select(col(e.start_s), col(e.end_s), col(e.energy_j), col(e.low_j), col(e.high_j)).where(
        (col(e.host) == device.host)
        & (col(e.device) == device.device)
        & (col(e.run_id) != run_id)
        & (col(e.resolution) == Resolution.RAW.value)
        & (col(e.end_s) > start_s)
        & (col(e.start_s) < end_s)
    )
    with ledger.transaction("read the holder's rows") as session:
        return [tuple(row) for row in session.execute(query)]  # type: ignore[misc]
