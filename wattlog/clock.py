"""Clocks, injected everywhere time is read, so tests drive time by hand."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Monotonic time for intervals, wall time for timestamps, and sleeping."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    def wall(self) -> float:
        """Seconds since the Unix epoch (for timestamps that leave the process)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block for `seconds` (no-op when <= 0)."""
        ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Block for up to `seconds`, or until `event` is set; whether it is set."""
        ...


class SystemClock:
    """The real clocks: time.monotonic, time.time, time.sleep."""

    # the functions themselves, not methods that call them: the sampler asks the time a few
    # times on every wake, and a Python frame there costs more than the clock read
    monotonic = staticmethod(time.monotonic)
    """See :meth:`Clock.monotonic`."""

    wall = staticmethod(time.time)
    """See :meth:`Clock.wall`."""

    def sleep(self, seconds: float) -> None:
        """See :meth:`Clock.sleep`."""
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """See :meth:`Clock.wait`."""
        return event.wait(seconds) if seconds > 0 else event.is_set()


class FakeClock:
    """A clock that moves only when told to; sleeping advances it instantly.

    Args:
        start_s: Initial monotonic time.
        wall_offset_s: Wall time = monotonic + this offset.
    """

    def __init__(self, start_s: float = 0.0, wall_offset_s: float = 1_700_000_000.0) -> None:
        self._now_s = start_s
        self._wall_offset_s = wall_offset_s
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        """See :meth:`Clock.monotonic`."""
        with self._lock:
            return self._now_s

    def wall(self) -> float:
        """See :meth:`Clock.wall`."""
        with self._lock:
            return self._now_s + self._wall_offset_s

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds` (>= 0)."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._now_s += seconds

    def sleep(self, seconds: float) -> None:
        """Advance instead of blocking."""
        if seconds > 0:
            self.advance(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Advance by `seconds` unless `event` is already set; whether it is set."""
        if not event.is_set():
            self.sleep(seconds)
        return event.is_set()
