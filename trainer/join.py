"""Joining the node's agent: energy of devices another agent measures, from its metrics.

When a sidecar (`wattlog agent`) already holds a device's lock, the tracker's
own agent skips it and names the holder and its metrics URL. The tracker then
reads that agent's ``wattlog_energy_joules_total`` (and uncertainty band) at
start and at close, and records the difference as this run's energy of the
device: counted once, by the agent that measures it, with its source label.
"""

from __future__ import annotations

import logging
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from wattlog.accounting.ledger import Ledger
from wattlog.clock import Clock
from wattlog.errors import SensorError
from wattlog.records import EnergyInterval, Kind, Source

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeviceCounter:
    """One device's cumulative energy as another agent serves it, joules."""

    host: str
    device: str
    kind: str
    source: str
    energy_j: float
    low_j: float
    high_j: float


def read_counters(url: str, devices: Iterable[str], timeout_s: float = 5.0) -> dict[str, DeviceCounter]:
    """Scrape `url` and return the energy counters of `devices` it serves.

    Raises:
        SensorError: The agent cannot be reached or serves no parsable metrics.
    """
    wanted = set(devices)
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # the node agent, on loopback
            text = response.read().decode()
    except OSError as error:
        raise SensorError(f"cannot read the node agent's metrics at {url}: {error}") from error
    energy: dict[str, Mapping[str, str]] = {}
    joules: dict[str, float] = {}
    bands: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            device = sample.labels.get("device", "")
            if device not in wanted:
                continue
            if sample.name == "wattlog_energy_joules_total":
                energy[device] = sample.labels
                joules[device] = sample.value
            elif sample.name == "wattlog_energy_uncertainty_joules":
                bands[(device, sample.labels.get("bound", ""))] = sample.value
    return {
        device: DeviceCounter(
            host=labels.get("host", ""),
            device=device,
            kind=labels.get("kind", ""),
            source=labels.get("source", ""),
            energy_j=joules[device],
            low_j=bands.get((device, "low"), joules[device]),
            high_j=bands.get((device, "high"), joules[device]),
        )
        for device, labels in energy.items()
    }


def intervals_between(
    start: Mapping[str, DeviceCounter], end: Mapping[str, DeviceCounter], start_s: float, end_s: float
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
        rows.append(
            EnergyInterval(
                host=last.host,
                device=device,
                kind=Kind(last.kind),
                source=Source(last.source),
                start_s=start_s,
                end_s=end_s,
                energy_j=energy,
                low_j=low,
                high_j=high,
            )
        )
    return rows


class JoinedAgents:
    """The other agents of the node whose devices this run uses: read at start, recorded at close.

    Args:
        clock: Wall-clock source for the interval's ends.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._start: dict[str, dict[str, DeviceCounter]] = {}
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
        """Store each joined device's energy since start() as one ledger row."""
        end_s = self._clock.wall()
        for url, start in self._start.items():
            rows = intervals_between(start, read_counters(url, start), self._start_s, end_s)
            if rows:
                ledger.record_intervals(run_id, rows)
