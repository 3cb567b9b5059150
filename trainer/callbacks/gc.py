"""Explicit garbage collection, as OLMo 2 does (section 6.4).

Python's automatic collector pauses whichever rank happens to cross a
threshold, and every other rank then waits for it at the next collective.
With automatic GC off and ``gc.collect(generation)`` every N steps, all ranks
pause on the same step, together.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any, ClassVar

from wattlog.errors import ConfigError
from wattlog.trainer.callback import Callback


@dataclass
class GCCallback(Callback):
    """Turn automatic GC off for the run and collect every `every_steps` steps."""

    priority: ClassVar[int] = -1

    enabled: bool = True
    """Off leaves Python's automatic GC alone."""
    every_steps: int = 1000
    """Collect when step % every_steps == 0 (the same step on every rank)."""
    generation: int = 1
    """Generation passed to gc.collect (1: young objects, cheap)."""
    _was_enabled: bool | None = None
    _collections: int = 0

    def __post_init__(self) -> None:
        """Validate the config."""
        if self.every_steps < 1:
            raise ConfigError(f"every_steps must be >= 1, got {self.every_steps}")
        if self.generation not in (0, 1, 2):
            raise ConfigError(f"generation must be 0, 1 or 2, got {self.generation}")

    @property
    def collections(self) -> int:
        """Collections run by this callback."""
        return self._collections

    def pre_train(self, context: Any) -> None:
        """Disable automatic GC (remembering whether it was on) and start clean."""
        if not self.enabled or self._was_enabled is not None:
            return
        self._was_enabled = gc.isenabled()
        gc.disable()
        gc.collect(self.generation)

    def post_step(self, step: int) -> None:
        """Collect on every multiple of `every_steps`."""
        if self.enabled and self._was_enabled is not None and step % self.every_steps == 0:
            gc.collect(self.generation)
            self._collections += 1

    def close(self) -> None:
        """Restore the automatic collector's previous state."""
        if self._was_enabled:
            gc.enable()
        self._was_enabled = None
