"""A device's publication period, inferred from the times between its publications (as Zeus does)."""

from __future__ import annotations

import statistics
from collections import deque

_REFRESH_EVERY = 8  # the median moves slowly: after the first 8 intervals, re-sorted every 8th


class PublicationPeriod:
    """The median of the last `kept` intervals between publications, refreshed cheaply.

    Args:
        kept: Recent intervals the median is taken over.
        needed: Intervals before `period_s` answers (a median of 1 or 2 is noise).
    """

    def __init__(self, kept: int, needed: int) -> None:
        self._intervals: deque[float] = deque(maxlen=kept)
        self._needed = needed
        self._taken = 0
        self._median_s: float | None = None

    def add(self, interval_s: float) -> None:
        """Take the time since the previous publication, seconds."""
        self._intervals.append(interval_s)
        self._taken += 1
        if self._taken <= _REFRESH_EVERY or self._taken % _REFRESH_EVERY == 0:
            self._median_s = statistics.median(self._intervals)

    @property
    def median_s(self) -> float | None:
        """The median of the intervals taken so far, however few (None before the first)."""
        return self._median_s

    @property
    def period_s(self) -> float | None:
        """The publication period, once `needed` intervals are in (else None)."""
        return self._median_s if len(self._intervals) >= self._needed else None
