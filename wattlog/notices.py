"""Lines a user must see (a new attempt's name, a figure that cannot be logged), whatever logging is set.

A library must not configure logging, and wattlog's loggers show only errors
unless the application configures logging; a warning the user has to act on
would then vanish. These lines go straight to stderr instead, once each::

    notices = Notices()
    notices.tell("run my-run exists: this one is recorded as my-run-2")
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

__all__ = ["PREFIX", "Notices"]

PREFIX = "wattlog: "
"""How every notice starts, so a user tells it from the training's own output."""

log = logging.getLogger(__name__)


class Notices:
    """Writes each distinct notice once to stderr (and logs it at INFO for log files).

    Args:
        stream: Where notices go (None: the process's stderr at the time of writing, so pytest's
            capture and a redirected stderr both see them).
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._told: set[str] = set()

    def tell(self, message: str) -> bool:
        """Write `message` as one line on stderr unless already told; returns whether it was written."""
        if message in self._told:
            return False
        self._told.add(message)
        log.info("%s", message)
        stream = self._stream if self._stream is not None else sys.stderr
        try:
            stream.write(f"{PREFIX}{message}\n")
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr must not stop a training
            return False
        return True
