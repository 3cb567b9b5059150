"""An audit bundle's energy rows, column by column: every float given back exactly, in few bytes.

A 1,024-GPU month of 10 s rows is 265 M rows, and a real row's five joule figures carry every
digit of a double (an integrator splits a reading at the flush edge): as JSON they weighed ~20 B a
row after xz, 5.47 GB a month (bench.audit_size). Here each number is coded against what the
previous row of the same device (its stream) predicts, as the bits of IEEE-754 doubles:

- ``start_s`` against the stream's previous ``end_s`` (0 where rows are contiguous, as an agent's are);
- ``end_s`` against ``start_s`` + the previous row's length (0 at a steady flush interval);
- ``energy_j`` against the previous row's ``energy_j``;
- each band term (``low_j``, ``high_j``, ``random_low_j``, ``random_high_j``) against ``energy_j`` x
  the previous row's ratio of that term to its energy (0 or a few units in the last place where a
  band is a steady fraction of its energy, as the sensor profiles make most of them).

A residual is the difference of the two doubles' bits as 64-bit integers (mod 2^64, so any double
round-trips; a prediction that is not finite falls back to the previous value, so no NaN's bits,
which differ between CPUs, ever enter it), zigzag-coded as a LEB128 varint. Each column is one file
of varints in the rows' own order, so the bundle's xz finds the zeros and the repeats between the
devices of a host. ``rows/streams.json`` names the streams (host, device, kind, source, window,
parent); ``rows/order.bin`` gives each row's stream. The order is the ledger's, kept by the replay:
a sum's last digit depends on it.
"""

from __future__ import annotations

import itertools
import json
import math
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import BinaryIO

from wattlog.errors import ConfigError
from wattlog.records import EnergyInterval, Kind, Source

FORMAT = "wattlog-rows/2"
STREAMS = "rows/streams.json"
ORDER = "rows/order.bin"
BAND = ("low_j", "high_j", "random_low_j", "random_high_j")
COLUMNS = ("start_s", "end_s", "energy_j", *BAND)
CODING = (
    "Each rows/<column>.bin holds one zigzag LEB128 varint per row, in the rows' order; rows/order.bin "
    "gives each row's stream (an index into streams: host, device, kind, source, window, parent). A "
    "value is the IEEE-754 double whose 64-bit pattern is (the guess's pattern + the varint) mod 2^64. "
    "Guesses from the stream's previous row (all 0.0 before its first): start_s = previous end_s; "
    "end_s = start_s + (previous end_s - previous start_s); energy_j = previous energy_j; each of "
    "low_j, high_j, random_low_j, random_high_j = energy_j * (previous term / previous energy_j), or "
    "the previous term where the previous energy_j is 0 or that product is not finite."
)
"""How to read the columns without wattlog: written into rows/streams.json, as a reviewer reads it."""
_PACK_DOUBLE = struct.Struct("<d")
_PACK_BITS = struct.Struct("<Q")
_WRAP = 1 << 64


def column_file(column: str) -> str:
    """The bundle member holding one column's residuals."""
    return f"rows/{column}.bin"


def _bits(value: float) -> int:
    return int(_PACK_BITS.unpack(_PACK_DOUBLE.pack(value))[0])


def _double(bits: int) -> float:
    return float(_PACK_DOUBLE.unpack(_PACK_BITS.pack(bits % _WRAP))[0])


def _predictions(previous: Sequence[float], start_s: float, energy_j: float) -> list[float]:
    """What the stream's previous row (`previous`, in COLUMNS order; a new stream's is all zeros)
    predicts for each column of a row whose start and energy are `start_s` and `energy_j`: the
    start's and the energy's own guesses use neither, so a reader decodes those two first."""
    last_start, last_end, last_energy = previous[0], previous[1], previous[2]
    guesses = [last_end, start_s + (last_end - last_start), last_energy]
    for last_term in previous[3:]:
        guess = energy_j * (last_term / last_energy) if last_energy != 0 else last_term
        guesses.append(guess if math.isfinite(guess) else last_term)
    return guesses


def _values(row: EnergyInterval) -> tuple[float, ...]:
    return (row.start_s, row.end_s, *(getattr(row.figure, name) for name in COLUMNS[2:]))


def _stream_key(row: EnergyInterval) -> tuple[str, ...]:
    return (row.host, row.device, str(row.kind), str(row.source), row.window, row.parent)


def _put(out: bytearray, residual: int) -> None:
    """Append a signed residual (-2^63 .. 2^63-1) zigzag-coded as a LEB128 varint."""
    coded = residual * 2 if residual >= 0 else -residual * 2 - 1
    while coded >= 0x80:
        out.append((coded & 0x7F) | 0x80)
        coded >>= 7
    out.append(coded)


def _signed(bits: int) -> int:
    """A difference of two 64-bit patterns, mod 2^64, as the signed residual closest to 0."""
    bits %= _WRAP
    return bits - _WRAP if bits >= _WRAP // 2 else bits


def member_names() -> tuple[str, ...]:
    """The binary members of the rows: each row's stream, then one file per column."""
    return (ORDER, *(column_file(name) for name in COLUMNS))


class RowCoder:
    """Codes rows one at a time into binary sinks (files, for a run of millions of rows), then says
    what `header` must be written beside them."""

    _CHUNK = 1 << 20

    def __init__(self, sinks: Mapping[str, BinaryIO]) -> None:
        self._sinks = [sinks[name] for name in member_names()]
        self._buffers = [bytearray() for _ in self._sinks]
        self._streams: dict[tuple[str, ...], int] = {}
        self._previous: list[tuple[float, ...]] = []
        self.rows = 0

    def add(self, row: EnergyInterval) -> None:
        """Code one row against the previous row of its stream."""
        index = self._streams.setdefault(_stream_key(row), len(self._streams))
        if index == len(self._previous):
            self._previous.append((0.0,) * len(COLUMNS))
        order, *columns = self._buffers
        _put(order, index)
        values = _values(row)
        guesses = _predictions(self._previous[index], values[0], values[2])
        for out, value, guess in zip(columns, values, guesses, strict=True):
            _put(out, _signed(_bits(value) - _bits(guess)))
        self._previous[index] = values
        self.rows += 1
        if len(columns[2]) > self._CHUNK:  # the energy's column grows fastest
            self.flush()

    def flush(self) -> None:
        """Write what is coded so far to the sinks."""
        for sink, buffer in zip(self._sinks, self._buffers, strict=True):
            sink.write(buffer)
            buffer.clear()

    def header(self) -> bytes:
        """rows/streams.json: the format, how to read it, the row count and the streams (flushes first)."""
        self.flush()
        streams = list(self._streams)
        header = {"format": FORMAT, "coding": CODING, "rows": self.rows, "columns": list(COLUMNS)}
        return json.dumps(header | {"streams": streams}, separators=(",", ":")).encode()


def _varints(source: BinaryIO, chunk: int = 1 << 20) -> Iterator[int]:
    """The signed residuals of a column file, in order; a number cut off at the end is an error."""
    coded = shift = 0
    while block := source.read(chunk):
        for byte in block:
            coded |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                yield coded // 2 if coded % 2 == 0 else -(coded + 1) // 2
                coded = shift = 0
    if shift:
        raise ConfigError("a column file of the bundle's rows ends inside a number")


def row_batches(
    header_text: bytes, sources: Mapping[str, BinaryIO], batch_rows: int = 20_000
) -> Iterator[list[EnergyInterval]]:
    """The rows a RowCoder wrote, `batch_rows` at a time, every float exactly as it was, in order.

    Raises:
        ConfigError: Of another format, or the files hold another number of rows or streams.
        ValueError: A stream names an unknown kind or source.
    """
    header = json.loads(header_text)
    if header.get("format") != FORMAT or header.get("columns") != list(COLUMNS):
        raise ConfigError(f"{STREAMS}: format {header.get('format')!r}, this wattlog reads {FORMAT!r}")
    order, *columns = (_varints(sources[name]) for name in member_names())
    streams = [tuple(s) for s in header["streams"]]
    previous = [(0.0,) * len(COLUMNS)] * len(streams)
    count, batch = 0, []
    try:
        for index in itertools.islice(order, int(header["rows"])):
            if not 0 <= index < len(streams):
                raise ConfigError(
                    f"{ORDER}: row {count} names stream {index}, {STREAMS} lists {len(streams)}"
                )
            residuals = [next(column) for column in columns]
            last = previous[index]
            start = _double(_bits(last[1]) + residuals[0])  # as _predictions guesses them
            energy = _double(_bits(last[2]) + residuals[2])
            guesses = _predictions(last, start, energy)
            previous[index] = values = tuple(
                _double(_bits(g) + r) for g, r in zip(guesses, residuals, strict=True)
            )
            batch.append(_row(streams[index], values))
            count += 1
            if len(batch) == batch_rows:
                yield batch
                batch = []
    except StopIteration as e:
        raise ConfigError(
            f"the bundle's rows: fewer numbers than the {header['rows']} rows {STREAMS} says"
        ) from e
    if count != header["rows"] or any(next(it, None) is not None for it in (order, *columns)):
        raise ConfigError(f"the bundle's rows: not the {header['rows']} rows {STREAMS} says")
    if batch:
        yield batch


def _row(stream: Sequence[str], values: Sequence[float]) -> EnergyInterval:
    host, device, kind, source, window, parent = stream
    row = EnergyInterval.of(host, device, Kind(kind), Source(source), *values)
    return replace(row, window=window, parent=parent) if window else row
