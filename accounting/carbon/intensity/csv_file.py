"""The generic hourly CSV: two columns, ``timestamp,kg_co2_per_kwh``.

An optional header, ``#`` comments and blank lines are allowed; a timestamp is
ISO 8601 (naive means UTC) or Unix seconds, and must fall on the hour::

    timestamp,kg_co2_per_kwh
    2026-01-01T00:00:00Z,0.31
    2026-01-01T01:00:00Z,0.29
"""

from __future__ import annotations

import math
from pathlib import Path

from wattlog.accounting.carbon.intensity.base import HourlySeries, IntensityRef, OpenContext, RegisteredSource
from wattlog.accounting.carbon.intensity.hours import iso_hour, timestamp_s
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError

EXPECTED = "expected 'timestamp,kg_co2_per_kwh' with an ISO 8601 or Unix timestamp on the hour"


def read_csv(path: Path | str) -> HourlySeries:
    """Read a ``timestamp,kg_co2_per_kwh`` file.

    Raises:
        ConfigError: Unreadable file, or a malformed line (named by its number).
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ConfigError(f"cannot read intensity series {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a text file; {EXPECTED}") from None
    values: dict[int, float] = {}
    data_lines = [(n, line.strip()) for n, line in enumerate(lines, start=1) if line.strip()]
    data_lines = [(n, text) for n, text in data_lines if not text.startswith("#")]
    if data_lines and _is_header(data_lines[0][1]):
        data_lines = data_lines[1:]
    for number, text in data_lines:
        try:
            hour, value = _parse_line(text)
        except ValueError as error:
            raise ConfigError(f"{path}, line {number}: {error}; {EXPECTED}") from None
        if hour in values:
            raise ConfigError(f"{path}, line {number}: hour {iso_hour(hour)} appears twice")
        values[hour] = value
    if not values:
        raise ConfigError(f"{path}: no intensity rows; {EXPECTED}")
    return HourlySeries(dict(sorted(values.items())), str(path))


def _is_header(text: str) -> bool:
    """A first line whose second field is no number and whose first is no timestamp."""
    fields = [f.strip() for f in text.split(",")]
    if len(fields) != 2:
        return False
    try:
        float(fields[1])
    except ValueError:
        return not _is_timestamp(fields[0])
    return False


def _parse_line(text: str) -> tuple[int, float]:
    fields = [f.strip() for f in text.split(",")]
    if len(fields) != 2:
        raise ValueError(f"{len(fields)} fields")
    stamp, raw_value = fields
    try:
        value = float(raw_value)
    except ValueError:
        raise ValueError(f"intensity {raw_value!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"intensity {raw_value} must be a finite number >= 0")
    t_s = timestamp_s(stamp)
    if t_s % HOUR_S:
        raise ValueError(f"timestamp {stamp!r} is not on the hour")
    return int(t_s), value


def _is_timestamp(stamp: str) -> bool:
    try:
        timestamp_s(stamp)
    except ValueError:
        return False
    return True


def _open(ref: IntensityRef, context: OpenContext) -> HourlySeries:
    del context
    return read_csv(ref.series)


SOURCE = RegisteredSource("csv", "timestamp,kg_co2_per_kwh CSV", _open, reads_file=True)
