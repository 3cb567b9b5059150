"""What a user is told when a device read fails: one warning per device a minute, saying what the
ledger will hold for the stretch."""

from __future__ import annotations

import logging

logger = logging.getLogger("wattlog.telemetry.sampler")  # where these warnings have always come from

WARN_EVERY_S = 60.0
"""At most one warning per device (or backend) per minute."""


class ReadWarnings:
    """Rate-limited warnings of failed reads, keyed by device (or backend, for discovery)."""

    def __init__(self) -> None:
        self._last_s: dict[str, float] = {}

    def warn(self, key: str, now_s: float, error: Exception, *, bridged: bool = False) -> None:
        """Say `key`'s read failed at `now_s`, unless it was said less than a minute ago.

        A device with an energy counter (`bridged`) loses nothing: its next reading's counter covers
        the stretch exactly (the integrator's counter path), so no gap is stored and the note says so.
        """
        last_s = self._last_s.get(key)
        if last_s is None or now_s - last_s >= WARN_EVERY_S:
            self._last_s[key] = now_s
            held = "its energy counter covers the stretch" if bridged else "recorded as a gap"
            logger.warning("read of %s failed (%s; warnings rate-limited): %s", key, held, error)
