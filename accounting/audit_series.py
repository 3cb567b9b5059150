"""An audit bundle's power series, gathered a row at a time and written as series.json.

Per device: its rows' ends and mean power (W, to the milliwatt, NVML's own unit), in time order,
kept in arrays (16 B a row, not the rows themselves: a 1,024-GPU week of raw rows is 62 M), then
written in pieces. The counter series is the running sum of the device's `energy_j` in the rows
(rows/, coded as accounting.audit_rows says): written out again it held the bundle's least
compressible numbers (a 1,024-GPU month 1.41 GB, bench.audit_size). The verifier writes the series
of the rows it replayed the same way and compares the two files' SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import math
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from wattlog.records import EnergyInterval

SERIES = "series.json"
WHAT = (
    "the ledger's rows: mean power per row (W, to the mW); each device's energy counter since the "
    "run's start is the running sum of its rows' energy_j (rows/energy_j.bin, coded as "
    "rows/streams.json says)"
)
_PIECE = 100_000
"""Numbers written at a time (a device's month of 10 s rows is 259,200)."""


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
    end_s: array[float] = field(default_factory=lambda: array("d"))
    power_w: array[float] = field(default_factory=lambda: array("d"))  # NaN: a row of no length


class PowerSeries:
    """The series of the rows `add`ed, in the order they come (the ledger's: time, then id)."""

    def __init__(self) -> None:
        self._devices: dict[str, _Device] = {}
        self._spans_ms: Counter[int] = Counter()

    def add(self, row: EnergyInterval) -> None:
        """One row: its end and mean power, to its device's series."""
        name = f"{row.host}/{row.device}"
        device = self._devices.get(name)
        if device is None:
            device = self._devices[name] = _Device(str(row.kind), str(row.source))
        span_s = row.end_s - row.start_s
        device.end_s.append(row.end_s)
        device.power_w.append(round(row.energy_j / span_s, 3) if span_s > 0 else math.nan)
        self._spans_ms[round(span_s * 1000)] += 1

    def resolution_s(self) -> float | None:
        """The rows' median length, to the millisecond (None without rows)."""
        count, seen = sum(self._spans_ms.values()), 0
        for span_ms in sorted(self._spans_ms):
            seen += self._spans_ms[span_ms]
            if seen > count // 2:
                return span_ms / 1000
        return None

    def write(self, sink: Sink) -> None:
        """series.json, devices by name: {"devices": {name: {end_s, kind, power_w, source}},
        "resolution_s", "what"} (the keys sorted, as json.dumps(sort_keys=True) would)."""
        sink.write(b'{"devices":{')
        for i, name in enumerate(sorted(self._devices)):
            device = self._devices[name]
            sink.write(b"," if i else b"")
            sink.write(f'{json.dumps(name)}:{{"end_s":'.encode())
            _numbers(sink, device.end_s)
            sink.write(f',"kind":{json.dumps(device.kind)},"power_w":'.encode())
            _numbers(sink, device.power_w)
            sink.write(f',"source":{json.dumps(device.source)}}}'.encode())
        resolution = self.resolution_s()
        tail = {"resolution_s": resolution, "what": WHAT}
        sink.write(b"}," + json.dumps(tail, separators=(",", ":"))[1:].encode())


def _numbers(sink: Sink, values: array[float]) -> None:
    """A JSON list of `values` (NaN as null), `_PIECE` numbers at a time."""
    sink.write(b"[")
    for start in range(0, len(values), _PIECE):
        piece = values[start : start + _PIECE]
        text = ",".join("null" if math.isnan(v) else repr(v) for v in piece)
        sink.write((b"," if start else b"") + text.encode())
    sink.write(b"]")
