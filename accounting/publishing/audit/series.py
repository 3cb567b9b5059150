"""An audit bundle's power and counter series: what series.json says of them, and the CSV of them.

The series are the rows: a row's mean power is its ``energy_j / (end_s - start_s)`` and a device's
counter since the run's start is the running sum of its rows' ``energy_j``. Written out again beside
the rows they weighed more than the rows (power to the mW: 2.9 B a row after xz, a 1,024-GPU month
0.77 GB of a 1 GB bundle, bench.audit_size) and said nothing new, so series.json holds each
device's kind, source, rows and span, the rows' resolution and how the series follow from the rows,
and `wattlog audit series BUNDLE -o series.csv` writes them (`write_csv`) from the bundle's rows.
The verifier writes series.json of the rows it replayed the same way and compares the SHA-256.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Protocol, TextIO

from wattlog.escape import for_csv
from wattlog.records import BAND_TERMS, EnergyInterval, band_terms, summed_band

SERIES = "series.json"
WHAT = (
    "the ledger's rows are the series: a row's mean power (W) is energy_j / (end_s - start_s); a "
    "device's energy counter since the run's start is the running sum of its rows' energy_j "
    "(rows/, coded as rows/streams.json says); `wattlog audit series BUNDLE -o series.csv` writes both"
)
CSV_COLUMNS = (
    "host", "device", "kind", "source", "start_s", "end_s", "energy_j", "low_j", "high_j", "power_w",
    "counter_j", "counter_low_j", "counter_high_j",
)  # fmt: skip
"""A row of `wattlog audit series`: each energy with its band (the row's as stored; the counter's as
the ledger sums rows, before the run's band revisions, revisions.json), its source on every line."""


class Sink(Protocol):
    """Where series.json goes: a file, or a `Digest`."""

    def write(self, data: bytes, /) -> object:
        """Take the next bytes."""


class Digest:
    """A sink that keeps only the SHA-256 of what is written (the verifier's series: never stored)."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()

    def write(self, data: bytes, /) -> int:
        """Hash the next bytes."""
        self._sha.update(data)
        return len(data)

    def hexdigest(self) -> str:
        """The SHA-256 of everything written, as sha256_of gives a file's."""
        return self._sha.hexdigest()


@dataclass
class _Device:
    kind: str
    source: str
    rows: int
    start_s: float
    end_s: float


class PowerSeries:
    """What series.json says of the rows `add`ed: each device's series, in a few numbers."""

    def __init__(self) -> None:
        self._devices: dict[str, _Device] = {}
        self._spans_ms: Counter[int] = Counter()

    def add(self, row: EnergyInterval) -> None:
        """One row: counted in its device's series."""
        name = f"{row.host}/{row.device}"
        device = self._devices.get(name)
        if device is None:
            device = self._devices[name] = _Device(str(row.kind), str(row.source), 0, row.start_s, row.end_s)
        device.rows += 1
        device.start_s, device.end_s = min(device.start_s, row.start_s), max(device.end_s, row.end_s)
        self._spans_ms[round((row.end_s - row.start_s) * 1000)] += 1

    def resolution_s(self) -> float | None:
        """The rows' median length, to the millisecond (None without rows)."""
        count, seen = sum(self._spans_ms.values()), 0
        for span_ms in sorted(self._spans_ms):
            seen += self._spans_ms[span_ms]
            if seen > count // 2:
                return span_ms / 1000
        return None

    def write(self, sink: Sink) -> None:
        """series.json: {"devices": {name: {end_s, kind, rows, source, start_s}}, "resolution_s", "what"}."""
        devices = {name: vars(self._devices[name]) for name in sorted(self._devices)}
        doc = {"devices": devices, "resolution_s": self.resolution_s(), "what": WHAT}
        sink.write(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode())


def unknown_devices(series_doc: bytes, wanted: Collection[str]) -> list[str]:
    """Those of `wanted` (each a device, or host/device) that series.json (`series_doc`) has no series of."""
    names = json.loads(series_doc)["devices"]
    return [name for name in wanted if not any(_matches(known, name) for known in names)]


def _matches(name: str, wanted: str) -> bool:
    """Whether the series `name` (host/device) is the one `wanted` names (host/device, or device)."""
    return wanted in (name, name.partition("/")[2])


def write_csv(batches: Iterable[list[EnergyInterval]], out: TextIO, devices: Collection[str] = ()) -> int:
    """The rows of `batches` (in the ledger's order) as CSV_COLUMNS, each with its mean power (empty for
    a row of no length) and its device's counter and band: the series series.json describes; only the
    `devices` named (a device, or host/device) where any are. Returns the rows written."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    counters: dict[tuple[str, str], float] = {}
    bands: dict[tuple[str, str], list[float]] = {}  # each device's running sums of BAND_TERMS
    count = 0
    for batch in batches:
        for row in batch:
            key = (row.host, row.device)
            if devices and not any(_matches(f"{row.host}/{row.device}", name) for name in devices):
                continue
            counters[key] = counter = counters.get(key, 0.0) + row.energy_j
            sums = bands.setdefault(key, [0.0] * len(BAND_TERMS))
            for i, term in enumerate(band_terms(row)):
                sums[i] += term
            span_s = row.end_s - row.start_s
            power = repr(row.energy_j / span_s) if span_s > 0 else ""
            energy = map(repr, (row.start_s, row.end_s, row.energy_j, row.low_j, row.high_j))
            counted = map(repr, (counter, *summed_band(*sums)))
            names = (for_csv(row.host), for_csv(row.device))  # from a bundle: never a spreadsheet formula
            writer.writerow((*names, str(row.kind), str(row.source), *energy, power, *counted))
            count += 1
    return count
