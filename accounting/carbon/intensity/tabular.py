"""What the public hourly files (Electricity Maps, EIA-930) share: CSV rows, hours, numbers, the series."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

from wattlog.accounting.carbon.intensity.base import HourlySeries, HourProvenance
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError


def rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows (as dicts) of a CSV file, blank lines skipped.

    Raises:
        ConfigError: Unreadable or not text.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise ConfigError(f"cannot read intensity series {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(
            f"{path} is not a text file; expected CSV (timestamp,kg_co2_per_kwh), Electricity Maps or EIA-930"
        ) from None
    reader = csv.DictReader(line for line in text.splitlines() if line.strip())
    found = list(reader)
    return list(reader.fieldnames or []), found


def header(path: Path | str) -> list[str]:
    """The column names of a CSV file."""
    return rows(Path(path))[0]


def hour(stamp: str, fmt: str | None, path: Path, line: int) -> int:
    """The Unix second of a timestamp on the hour (`fmt` for strptime, None for ISO 8601)."""
    try:
        moment = datetime.strptime(stamp.strip(), fmt) if fmt else datetime.fromisoformat(stamp.strip())
    except ValueError:
        raise ConfigError(f"{path}, line {line}: timestamp {stamp!r} is not a date and time") from None
    t_s = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    if t_s % HOUR_S:
        raise ConfigError(f"{path}, line {line}: timestamp {stamp!r} is not on the hour")
    return int(t_s)


def number(text: str | None) -> float | None:
    """A number that may have thousands separators; None when the cell is empty."""
    text = (text or "").replace(",", "").strip()
    return float(text) if text else None


def series(
    values: dict[int, float], provenance: dict[int, HourProvenance], path: Path, provider: str
) -> HourlySeries:
    """The series read from `path`, its origin counting the hours the provider marked estimated."""
    if not values:
        raise ConfigError(f"{path}: no intensity rows")
    estimated = sum(p.estimated for p in provenance.values())
    origin = f"{path} ({provider}; {estimated} of {len(values)} hours marked estimated)"
    return HourlySeries(dict(sorted(values.items())), origin, dict(sorted(provenance.items())))
