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


class CounterPace:
    """When to read again a counter whose driver gives no update times: one update period after it changed.

    A read that finds the value changed saw the update since the previous read, so the
    next is due one observed update period later (`margin_s` before it); one that finds
    it unchanged is read again on the next tick (None), so a late update is never skipped
    and the pace follows the counter, whatever the tick. The period is the median of the
    last 16 times between changes, once 5 are in (None before: every tick).

    Args:
        margin_s: How much before the expected update the read is due.
    """

    def __init__(self, margin_s: float = 0.002) -> None:
        self._margin_s = margin_s
        self._change: tuple[float, float] | None = None  # (value, when it was first seen)
        self.updates = PublicationPeriod(16, 5)

    def after(self, value: float, t_s: float) -> float | None:
        """When to read next, given the value read at `t_s` (None: on the next tick)."""
        if self._change is not None and value == self._change[0]:
            return None
        if self._change is not None:
            self.updates.add(t_s - self._change[1])
        self._change = (value, t_s)
        period_s = self.updates.period_s
        return None if period_s is None else t_s + period_s - self._margin_s
