"""Built-in callbacks, one per module.

- gc: GCCallback, explicit garbage collection on the same step on every rank.
- speed: SpeedCallback, tokens/s, tokens per joule and MFU.
- stability: StabilityCallback, the detectors wired to events, counters and hooks.
"""

from __future__ import annotations

from collections.abc import Sequence

from wattlog.trainer.callback import Callback
from wattlog.trainer.callbacks.gc import GCCallback
from wattlog.trainer.callbacks.speed import SpeedCallback, SpeedFigures
from wattlog.trainer.callbacks.stability import StabilityCallback

__all__ = ["GCCallback", "SpeedCallback", "SpeedFigures", "StabilityCallback", "compose_callbacks"]


def compose_callbacks(
    given: Sequence[Callback], gc_every: int | None, flops_per_token: float | None, peak_flops: float | None
) -> list[Callback]:
    """The given callbacks plus a default of each built-in kind not given, highest priority first.

    Args:
        given: The user's callbacks, used as given (never changed).
        gc_every: Steps between explicit collections of the default GC callback; None: GC left alone.
        flops_per_token: Training FLOPs per token, for the default speed callback's MFU.
        peak_flops: Peak FLOP/s for that MFU (None: no MFU).
    """
    callbacks = list(given)
    kinds = {type(c) for c in callbacks}
    if GCCallback not in kinds:
        callbacks.append(GCCallback(enabled=gc_every is not None, every_steps=gc_every or 1000))
    if SpeedCallback not in kinds:
        callbacks.append(SpeedCallback(flops_per_token, peak_flops))
    if StabilityCallback not in kinds:
        callbacks.append(StabilityCallback())
    return sorted(callbacks, key=lambda c: -c.priority)
