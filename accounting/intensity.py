"""Carbon intensity: a constant, or an hourly series read from a CSV file.

With a series, emissions are computed hour by hour from the energy of each
hour (:func:`wattlog.accounting.footprint.co2_t_hourly`); :func:`split_by_hour_mwh`
turns ledger intervals into that energy per hour. Hours are keyed by their
start in Unix seconds (UTC).

The CSV has two columns, ``timestamp,kg_co2_per_kwh``, an optional header,
``#`` comments and blank lines; a timestamp is ISO 8601 (naive means UTC) or
Unix seconds, and must fall on the hour::

    timestamp,kg_co2_per_kwh
    2026-01-01T00:00:00Z,0.31
    2026-01-01T01:00:00Z,0.29
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from wattlog.accounting.ranges import Quantity, check_at_least, format_quantity
from wattlog.accounting.units import j_to_mwh
from wattlog.errors import ConfigError
from wattlog.records import EnergyInterval

HOUR_S = 3600


class IntensitySource(Protocol):
    """Carbon intensity over time, in kg CO2e per kWh."""

    @property
    def label(self) -> str:
        """What the table says about where the intensity comes from."""
        ...

    @property
    def constant_kg_per_kwh(self) -> Quantity | None:
        """The one value if the intensity never changes, else None."""
        ...

    def kg_per_kwh_at(self, t_s: float) -> Quantity:
        """Intensity during the hour that contains Unix time `t_s`."""
        ...


@dataclass(frozen=True, slots=True)
class ConstantIntensity:
    """One intensity (or range) for all hours.

    Attributes:
        kg_per_kwh: kg CO2e per kWh (>= 0), a float or a Range.
        source: Where the figure comes from.
    """

    kg_per_kwh: Quantity
    source: str

    def __post_init__(self) -> None:
        check_at_least(self.kg_per_kwh, 0.0, "carbon intensity", "carbon intensity cannot be negative")

    @property
    def label(self) -> str:
        """E.g. "0.332 kg/kWh (as published in ...)"."""
        return f"{format_quantity(self.kg_per_kwh, 'g')} kg/kWh ({self.source})"

    @property
    def constant_kg_per_kwh(self) -> Quantity:
        """The constant."""
        return self.kg_per_kwh

    def kg_per_kwh_at(self, t_s: float) -> Quantity:
        """The constant, whatever the time."""
        del t_s
        return self.kg_per_kwh


@dataclass(frozen=True, slots=True)
class HourProvenance:
    """Where one hour's intensity comes from.

    Attributes:
        source: The provider and its data source, e.g. "Electricity Maps (ENTSOE)".
        estimated: Whether the provider marked the hour estimated (or imputed).
    """

    source: str
    estimated: bool = False


@dataclass(frozen=True, slots=True)
class HourlySeries:
    """Intensity per hour, from a file; asking for an hour it lacks is an error, never a default.

    Attributes:
        kg_per_kwh_by_hour: Hour start (Unix s, UTC) -> kg CO2e per kWh.
        origin: The file it was read from (shown in tables).
        provenance: Hour start -> where that hour's value comes from and whether the provider
            marked it estimated (files that say so: Electricity Maps, EIA-930).
    """

    kg_per_kwh_by_hour: Mapping[int, float] = field(default_factory=dict)
    origin: str = ""
    provenance: Mapping[int, HourProvenance] = field(default_factory=dict)

    @classmethod
    def from_csv(cls, path: Path | str) -> HourlySeries:
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
            raise ConfigError(f"{path} is not a text file; {_EXPECTED}") from None
        values: dict[int, float] = {}
        data_lines = [(n, line.strip()) for n, line in enumerate(lines, start=1) if line.strip()]
        data_lines = [(n, text) for n, text in data_lines if not text.startswith("#")]
        if data_lines and _is_header(data_lines[0][1]):
            data_lines = data_lines[1:]
        for number, text in data_lines:
            try:
                hour, value = _parse_line(text)
            except ValueError as error:
                raise ConfigError(f"{path}, line {number}: {error}; {_EXPECTED}") from None
            if hour in values:
                raise ConfigError(f"{path}, line {number}: hour {_iso(hour)} appears twice")
            values[hour] = value
        if not values:
            raise ConfigError(f"{path}: no intensity rows; {_EXPECTED}")
        return cls(dict(sorted(values.items())), str(path))

    @property
    def label(self) -> str:
        """E.g. "hourly intensity from grid.csv"."""
        return f"hourly intensity from {self.origin}"

    @property
    def constant_kg_per_kwh(self) -> None:
        """None: the intensity changes by the hour."""
        return None

    def kg_per_kwh_at(self, t_s: float) -> float:
        """The intensity of the hour containing `t_s`.

        Raises:
            ConfigError: The series has no value for that hour.
        """
        hour = int(t_s // HOUR_S) * HOUR_S
        try:
            return self.kg_per_kwh_by_hour[hour]
        except KeyError:
            raise ConfigError(
                f"{self.label} has no value for the hour starting {_iso(hour)}: "
                "extend the file to cover the run"
            ) from None


def hour_start_s(t: float | datetime) -> int:
    """The start of the hour containing `t` (Unix seconds or a datetime; naive means UTC)."""
    if isinstance(t, datetime):
        t = (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()
    return int(t // HOUR_S) * HOUR_S


def split_by_hour_mwh(intervals: Iterable[EnergyInterval]) -> dict[int, float]:
    """Energy per clock hour, MWh, splitting each interval in proportion to its time in each hour.

    Args:
        intervals: Anything with start_s, end_s (Unix s) and energy_j, e.g. ledger rows.

    Returns:
        Hour start (Unix s) -> MWh, sorted by hour; the total equals the input's.
    """
    by_hour: dict[int, float] = {}
    for interval in intervals:
        start, end, energy_mwh = interval.start_s, interval.end_s, j_to_mwh(float(interval.energy_j))
        if end <= start:  # a zero-length interval: all of it in its hour
            by_hour[hour_start_s(start)] = by_hour.get(hour_start_s(start), 0.0) + energy_mwh
            continue
        hour = hour_start_s(start)
        while hour < end:
            overlap = min(end, hour + HOUR_S) - max(start, hour)
            by_hour[hour] = by_hour.get(hour, 0.0) + energy_mwh * overlap / (end - start)
            hour += HOUR_S
    return dict(sorted(by_hour.items()))


_EXPECTED = "expected 'timestamp,kg_co2_per_kwh' with an ISO 8601 or Unix timestamp on the hour"


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


def timestamp_s(stamp: str) -> float:
    """Unix seconds of an ISO 8601 time (UTC when it names no zone) or of a number of seconds.

    Raises:
        ValueError: Neither.
    """
    try:
        return float(stamp)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        raise ValueError(f"timestamp {stamp!r} is neither ISO 8601 nor Unix seconds") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _iso(t_s: int) -> str:
    return datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%dT%H:%MZ")
