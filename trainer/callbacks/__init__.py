"""Built-in callbacks, one per module.

- gc: GCCallback, explicit garbage collection on the same step on every rank.
- speed: SpeedCallback, tokens/s, tokens per joule and MFU.
- stability: StabilityCallback, the detectors wired to events, counters and hooks.
"""

from __future__ import annotations

from wattlog.trainer.callbacks.gc import GCCallback
from wattlog.trainer.callbacks.speed import SpeedCallback, SpeedFigures
from wattlog.trainer.callbacks.stability import StabilityCallback

__all__ = ["GCCallback", "SpeedCallback", "SpeedFigures", "StabilityCallback"]
