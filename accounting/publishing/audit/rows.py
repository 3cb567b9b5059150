"""An audit bundle's energy rows, column by column: every float given back exactly, in few bytes.

A 1,024-GPU month of 10 s rows is 265 M rows: as JSON they weighed ~20 B a row after xz, 5.47 GB a
month (bench.audit_size). Here each number is coded against what the previous row of the same
device (its stream) predicts:

- ``start_s`` against the stream's previous ``end_s`` (0 where rows are contiguous, as an agent's are);
- ``end_s`` against ``start_s`` + the previous row's length (0 at a steady flush interval);
- ``energy_j`` against the previous row's ``energy_j``;
- each band term (``low_j``, ``high_j``, ``random_low_j``, ``random_high_j``) against ``energy_j`` x
  the previous row's ratio of that term to its energy (0 or a unit where a band is a steady fraction
  of its energy, as the sensor profiles make most of them).

A joule figure that is a whole number of millijoules (an agent records its rows so:
`EnergyFigure.to_millijoules`) is coded as that number minus the guess's, in millijoules: a
10 s row's change of energy takes ~2-3 bytes, where the bits of a double whose every digit was
random took ~5.4 after xz. Any other number (a time, a row of an older ledger, a folded row's sum)
is coded as the difference of the two doubles' bits as 64-bit integers (mod 2^64, so any double
round-trips; a prediction that is not finite falls back to the previous value, so no NaN's bits,
which differ between CPUs, ever enter it). ``rows/units.bin`` says, a byte a row, which figures
are in millijoules. Residuals are zigzag-coded LEB128 varints, each column one file in the rows'
own order, so the bundle's xz finds the zeros and the repeats between the devices of a host; the
energy's lowest 16 bits are apart, two bytes a row in ``rows/energy_j.low.bin`` (random bits xz
cannot shrink, kept out of the way of those it can).
``rows/streams.json`` names the streams (host, device, kind, source, window, parent);
``rows/order.bin`` gives each row's stream. The order is the ledger's, kept by the replay: a sum's
last digit depends on it.
"""

from __future__ import annotations

import itertools
import json
import math
import struct
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from wattlog.errors import ConfigError
from wattlog.records import EnergyInterval, Kind, Source, millijoules

FORMAT = "wattlog-rows/3"
STREAMS = "rows/streams.json"
ORDER = "rows/order.bin"
UNITS = "rows/units.bin"
ENERGY_LOW = "rows/energy_j.low.bin"
BAND = ("low_j", "high_j", "random_low_j", "random_high_j")
COLUMNS = ("start_s", "end_s", "energy_j", *BAND)
CODING = (
    "Each rows/<column>.bin holds one zigzag LEB128 varint per row, in the rows' order; rows/order.bin "
    "gives each row's stream (an index into streams: host, device, kind, source, window, parent). "
    "Guesses from the stream's previous row (all 0.0 before its first): start_s = previous end_s; "
    "end_s = start_s + (previous end_s - previous start_s); energy_j = previous energy_j; each of "
    "low_j, high_j, random_low_j, random_high_j = energy_j * (previous term / previous energy_j), or "
    "the previous term where the previous energy_j is 0 or that product is not finite. rows/units.bin "
    "holds a byte per row: where its bit i is set, the i-th of energy_j, low_j, high_j, random_low_j, "
    "random_high_j is k / 1000 (the double nearest it), k = round(guess * 1000) + the varint (ties to "
    "even; round(guess * 1000) taken as 0 where |guess * 1000| >= 2^50); every other value is the "
    "IEEE-754 double whose 64-bit pattern is (the guess's pattern + the varint) mod 2^64. energy_j's "
    "zigzag value is split: its lowest 16 bits in rows/energy_j.low.bin (2 bytes a row, little-endian), "
    "the rest (the value >> 16) the varint of rows/energy_j.bin."
)
"""How to read the columns without wattlog: written into rows/streams.json, as a reviewer reads it."""
_PACK_DOUBLE = struct.Struct("<d")
_PACK_BITS = struct.Struct("<Q")
_WRAP = 1 << 64
_MJ_LIMIT = 1 << 50
"""Millijoules below which k / 1000 and back give k (a double holds 53 bits)."""
_JOULES = range(2, len(COLUMNS))
"""The columns in joules (those that may be coded in millijoules)."""
_ENERGY = COLUMNS.index("energy_j")
_LOW_BITS = 16
"""The energy's change is ~20 random bits a row: its low 16 apart, in fixed bytes, and the varint of
the rest cost xz ~2.6 B where its varint whole cost ~2.9 (a 1,024-GPU month: 66 MB less)."""


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


def _in_millijoules(value: float) -> int | None:
    """`value` as k millijoules when it is exactly the double nearest k / 1000, else None."""
    if not abs(value) < _MJ_LIMIT / 1000:  # NaN and infinities too
        return None
    k = millijoules(value)
    return k if _bits(k / 1000) == _bits(value) else None  # bits: -0.0 is not 0 mJ


def _guess_millijoules(guess: float) -> int:
    """A guess in millijoules, as CODING says."""
    return millijoules(guess) if abs(guess * 1000) < _MJ_LIMIT else 0


def _zigzag(residual: int) -> int:
    """A signed residual (-2^63 .. 2^63-1) as an unsigned number, small ones small."""
    return residual * 2 if residual >= 0 else -residual * 2 - 1


def _unzigzag(coded: int) -> int:
    return coded // 2 if coded % 2 == 0 else -(coded + 1) // 2


def _put(out: bytearray, coded: int) -> None:
    """Append an unsigned number as a LEB128 varint."""
    while coded >= 0x80:
        out.append((coded & 0x7F) | 0x80)
        coded >>= 7
    out.append(coded)


def _signed(bits: int) -> int:
    """A difference of two 64-bit patterns, mod 2^64, as the signed residual closest to 0."""
    bits %= _WRAP
    return bits - _WRAP if bits >= _WRAP // 2 else bits


def member_names() -> tuple[str, ...]:
    """The binary members of the rows: each row's stream and units, then one file per column."""
    return (ORDER, UNITS, ENERGY_LOW, *(column_file(name) for name in COLUMNS))


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
        order, units, energy_low, *columns = self._buffers
        _put(order, index)
        values = _values(row)
        guesses = _predictions(self._previous[index], values[0], values[2])
        unit_bits = 0
        for i, (out, value, guess) in enumerate(zip(columns, values, guesses, strict=True)):
            millijoules = _in_millijoules(value) if i in _JOULES else None
            if millijoules is None:
                coded = _zigzag(_signed(_bits(value) - _bits(guess)))
            else:
                coded = _zigzag(millijoules - _guess_millijoules(guess))
                unit_bits |= 1 << (i - _JOULES.start)
            if i == _ENERGY:
                energy_low += (coded & 0xFFFF).to_bytes(2, "little")
                coded >>= _LOW_BITS
            _put(out, coded)
        units.append(unit_bits)
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
    """The unsigned numbers of a column file, in order; a number cut off at the end is an error."""
    coded = shift = 0
    while block := source.read(chunk):
        for byte in block:
            coded |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                yield coded
                coded = shift = 0
    if shift:
        raise ConfigError("a column file of the bundle's rows ends inside a number")


def _header(text: bytes) -> dict[str, Any]:
    """rows/streams.json, read, of this format.

    Raises:
        ConfigError: Of another format (an older wattlog's bundle: built again, it verifies).
    """
    header: dict[str, Any] = json.loads(text)
    if header.get("format") != FORMAT or header.get("columns") != list(COLUMNS):
        raise ConfigError(
            f"{STREAMS}: format {header.get('format')!r}, this wattlog reads {FORMAT!r}: "
            "build the bundle again with this wattlog"
        )
    return header


def bundle_rows(members: Mapping[str, Path]) -> Iterator[list[EnergyInterval]]:
    """The rows of an unpacked bundle (its files by name), a batch at a time, as `row_batches` gives.

    Raises:
        ConfigError: As `row_batches`, or a file of the rows is missing.
    """
    header = members[STREAMS].read_bytes()
    _header(header)  # of this format before its files are looked for: an older one has others
    if missing := [name for name in member_names() if name not in members]:
        raise ConfigError(f"the bundle's rows: {', '.join(missing)} missing")
    with ExitStack() as files:
        sources = {name: files.enter_context(members[name].open("rb")) for name in member_names()}
        yield from row_batches(header, sources)


def _fixed(source: BinaryIO, width: int, chunk: int = 1 << 20) -> Iterator[int]:
    """The file's `width`-byte little-endian numbers, in order (rows/units.bin: a byte a row); a number
    cut off at the end is an error."""
    while block := source.read(chunk * width):
        if len(block) % width:
            raise ConfigError(f"a file of the bundle's rows ends inside a {width}-byte number")
        yield from (int.from_bytes(block[i : i + width], "little") for i in range(0, len(block), width))


def row_batches(
    header_text: bytes, sources: Mapping[str, BinaryIO], batch_rows: int = 20_000
) -> Iterator[list[EnergyInterval]]:
    """The rows a RowCoder wrote, `batch_rows` at a time, every float exactly as it was, in order.

    Raises:
        ConfigError: Of another format, or the files hold another number of rows or streams.
        ValueError: A stream names an unknown kind or source.
    """
    header = _header(header_text)
    order, *columns = (_varints(sources[name]) for name in member_names() if name not in (UNITS, ENERGY_LOW))
    units, energy_low = _fixed(sources[UNITS], 1), _fixed(sources[ENERGY_LOW], 2)
    streams = [tuple(s) for s in header["streams"]]
    previous = [(0.0,) * len(COLUMNS)] * len(streams)
    count, batch = 0, []
    try:
        for index in itertools.islice(order, int(header["rows"])):
            if not 0 <= index < len(streams):
                raise ConfigError(
                    f"{ORDER}: row {count} names stream {index}, {STREAMS} lists {len(streams)}"
                )
            coded = [next(c) for c in columns]
            coded[_ENERGY] = coded[_ENERGY] << _LOW_BITS | next(energy_low)
            residuals = [_unzigzag(c) for c in coded]
            previous[index] = values = _decoded(previous[index], next(units), residuals)
            batch.append(_row(streams[index], values))
            count += 1
            if len(batch) == batch_rows:
                yield batch
                batch = []
    except StopIteration as e:
        raise ConfigError(
            f"the bundle's rows: fewer numbers than the {header['rows']} rows {STREAMS} says"
        ) from e
    left_over = any(next(n, None) is not None for n in (order, units, energy_low, *columns))
    if count != header["rows"] or left_over:
        raise ConfigError(f"the bundle's rows: not the {header['rows']} rows {STREAMS} says")
    if batch:
        yield batch


def _decoded(last: tuple[float, ...], unit_bits: int, residuals: Sequence[int]) -> tuple[float, ...]:
    """A row's values from its stream's previous row `last`, its units byte and its residuals: the
    start and the energy first (their guesses need neither), then the rest, as _predictions guesses."""
    if unit_bits >> len(_JOULES):
        raise ConfigError(f"{UNITS}: a byte {unit_bits} names columns the rows do not have")

    def value(i: int, guess: float) -> float:
        if i in _JOULES and unit_bits >> (i - _JOULES.start) & 1:
            return (_guess_millijoules(guess) + residuals[i]) / 1000
        return _double(_bits(guess) + residuals[i])

    start, energy = value(0, last[1]), value(_ENERGY, last[_ENERGY])  # as _predictions guesses them
    return tuple(value(i, guess) for i, guess in enumerate(_predictions(last, start, energy)))


def _row(stream: Sequence[str], values: Sequence[float]) -> EnergyInterval:
    host, device, kind, source, window, parent = stream
    row = EnergyInterval.of(host, device, Kind(kind), Source(source), *values)
    return replace(row, window=window, parent=parent) if window else row
