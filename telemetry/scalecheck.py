"""A counter's scale checked: its joules per count against power x time over the first minutes.

A counter whose joules per count is a reported resolution (AMD's
`counter_resolution`, a float32 near 15.259 uJ, while ROCm's SMI code hard-codes
15.3 uJ elsewhere: 0.27 % apart) can be on a scale no single reading shows.
Once counter and samples have been compared over `SCALE_CHECK_S` (clean spans
only: no reset, wrap or stale stretch), the counter's mean power is set against
the samples' (DeviceState.compare), with the spread of the 10 s spans compared
as its standard error. The verdict is said once in the device's notes:

- within `SCALE_TOLERANCE_REL` (0.2 %): the scale holds;
- further off, and by more than `SCALE_SIGMAS` standard errors: the scale
  differs, and the difference (relative, either way) is carried in the band from
  then on (`DeviceState.scale_doubt_rel`, applied to the whole figure);
- further off but within the samples' own spread: not resolved, said as such
  (the band's partial-observation term already covers the samples' noise).
"""

from __future__ import annotations

import math

from wattlog.telemetry.devicestate import DeviceState
from wattlog.telemetry.types import SensorProfile

SCALE_CHECK_S = 120.0
"""Seconds of clean comparison (the first minutes) before the scale is judged."""
SCALE_TOLERANCE_REL = 0.002
"""A scale within 0.2 % of power x time holds."""
SCALE_SIGMAS = 3.0
"""A difference beyond this many standard errors of the spans is the counter's, not the samples' noise."""


def scaled_by_resolution(profile: SensorProfile | None) -> bool:
    """Whether the profile's counter counts in units of a reported resolution (its scale can be off)."""
    return profile is not None and "resolution" in profile.counter_unit


def judge_scale(d: DeviceState, profile: SensorProfile | None) -> None:
    """Judge `d`'s counter scale once SCALE_CHECK_S of clean comparison are in (the caller holds the lock)."""
    if d.scale is not None or not scaled_by_resolution(profile) or d.check.lock is not None:
        return
    compared = d.compare()
    if compared is None or compared[1] < SCALE_CHECK_S:
        return
    rel, span_s = compared  # sampled vs counter: the counter reads 1 / (1 + rel) of power x time
    spans = (
        d.both.spans
    )  # 10 s spans compared (DeviceState.compare_span); their RMS about 0 bounds the spread
    se = math.sqrt(d.both.spans_sq / spans) / math.sqrt(spans - 1) if spans >= 2 else math.inf
    d.scale = (rel, se, span_s)
    if abs(rel) > SCALE_TOLERANCE_REL and abs(rel) > SCALE_SIGMAS * se:
        d.scale_doubt_rel = abs(rel)


def scale_note(d: DeviceState) -> str | None:
    """The scale check's verdict in words; None before it is judged."""
    if d.scale is None:
        return None
    rel, se, span_s = d.scale
    counter_rel = 1 / (1 + rel) - 1  # how far the counter reads from power x time
    spread = f"+-{se:.2%}" if math.isfinite(se) else "spread unknown"
    over = f"over the first {span_s:.0f} s"
    if abs(rel) <= SCALE_TOLERANCE_REL:
        return f"counter scale checked against power x time {over}: {counter_rel:+.2%}, within 0.2 %"
    if d.scale_doubt_rel:
        return (
            f"counter scale off power x time by {counter_rel:+.2%} ({spread}) {over} (15.3 uJ per "
            f"count vs the float32 15.259 is 0.27 %): joules per count uncertain, "
            f"+-{d.scale_doubt_rel:.2%} in the band"
        )
    return (
        f"counter scale not resolved to 0.2 % {over}: {counter_rel:+.2%}, "
        f"within the samples' spread ({spread})"
    )
