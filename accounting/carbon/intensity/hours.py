"""Clock hours: hour starts, ISO and Unix timestamps, and energy split into the hours it was drawn in.

Hours are keyed by their start in Unix seconds (UTC). :func:`split_by_hour_mwh` splits
ledger intervals; :class:`HourSplitter` splits a running total read now and then (what
live logs see) the same way, so both feed the one CO2 path with the same hours.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from wattlog.accounting.units import HOUR_S, j_to_mwh
from wattlog.records import EnergyInterval


def hour_start_s(t: float | datetime) -> int:
    """The start of the hour containing `t` (Unix seconds or a datetime; naive means UTC)."""
    if isinstance(t, datetime):
        t = (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()
    return int(t // HOUR_S) * HOUR_S


def _add_span(by_hour: dict[int, float], start: float, end: float, energy_mwh: float) -> None:
    """Add `energy_mwh` drawn over [start, end] to `by_hour`, in proportion to its time in each hour."""
    if end <= start:  # a zero-length interval: all of it in its hour
        by_hour[hour_start_s(start)] = by_hour.get(hour_start_s(start), 0.0) + energy_mwh
        return
    hour = hour_start_s(start)
    while hour < end:
        overlap = min(end, hour + HOUR_S) - max(start, hour)
        by_hour[hour] = by_hour.get(hour, 0.0) + energy_mwh * overlap / (end - start)
        hour += HOUR_S


def split_by_hour_mwh(intervals: Iterable[EnergyInterval]) -> dict[int, float]:
    """Energy per clock hour, MWh, splitting each interval in proportion to its time in each hour.

    Args:
        intervals: Anything with start_s, end_s (Unix s) and energy_j, e.g. ledger rows.

    Returns:
        Hour start (Unix s) -> MWh, sorted by hour; the total equals the input's.
    """
    by_hour: dict[int, float] = {}
    for interval in intervals:
        _add_span(by_hour, interval.start_s, interval.end_s, j_to_mwh(float(interval.energy_j)))
    return dict(sorted(by_hour.items()))


@dataclass(slots=True)
class HourSplitter:
    """Energy per clock hour of a running total read now and then, split as ledger intervals are.

    Each reading's increase since the one before is one interval: the same split as
    :func:`split_by_hour_mwh` gives for the ledger's rows over the same times.

    Attributes:
        start_s: When the total was 0 (the agent's start), Unix s.
    """

    start_s: float
    _last_s: float = field(init=False)
    _last_j: float = field(init=False, default=0.0)
    _by_hour: dict[int, float] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._last_s = self.start_s

    def add(self, t_s: float, total_j: float) -> dict[int, float]:
        """Take the total at `t_s` (Unix s); returns the energy per hour so far, MWh, sorted by hour."""
        if total_j > self._last_j:
            _add_span(self._by_hour, self._last_s, max(t_s, self._last_s), j_to_mwh(total_j - self._last_j))
        self._last_s, self._last_j = max(t_s, self._last_s), max(total_j, self._last_j)
        return dict(sorted(self._by_hour.items()))


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


def iso_hour(t_s: int) -> str:
    """E.g. "2026-01-01T00:00Z"."""
    return datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%dT%H:%MZ")
