"""A stale counter, told by its values: a counter that held its value, then caught up.

Some drivers stamp every read anew (AMD's amdsmi_get_energy_count: the boot-time
clock at the read), so a counter that stops updating looks fresh by its times.
Its values tell: the integrator takes only a changed value as an update
(telemetry.accumulate), so when the counter moves again its step spans the
whole stretch it held. A step whose value had been read unchanged for longer
than `STALE_UPDATES` of the counter's observed update periods (and
`STALE_MIN_S`) is a stale stretch: its catch-up is the counter's own energy and
is kept, checked against power x time over the same stretch, and the
difference between the two is carried in the band (`CounterState.stale_doubt_j`);
it is not compared with the samples (the phase-lock check), and the note names
it. A catch-up larger than the device could draw is still an impossible jump
(a gap), and a counter that went backwards is still a reset.
"""

from __future__ import annotations

from wattlog.telemetry.devicestate import DeviceState

STALE_UPDATES = 5.0
"""A counter unchanged for this many of its observed update periods has stopped, not paused."""
STALE_MIN_S = 0.5
"""...and for at least this long (a counter updating every ~100 ms: 5 missed updates)."""


def stale_stretch(d: DeviceState, last_change_t: float) -> bool:
    """Whether `d`'s counter held its value from `last_change_t` longer than a stale stretch's threshold.

    Judged once the counter's update period is known (5 changes seen): a counter that
    updates every second is not stale at its first one-second holds.
    """
    held_until, period_s = d.counter.unchanged_until, d.counter.changes.period_s
    if held_until is None or period_s is None:
        return False
    return held_until - last_change_t > max(STALE_MIN_S, STALE_UPDATES * period_s)


def caught_up(d: DeviceState, delta_j: float, dt: float) -> None:
    """Record a stale stretch of `dt` s whose catch-up is `delta_j`: kept, checked against power x time."""
    held_j, held_t = d.counter.held_at_change
    now_t = d.power.last_power_t
    if held_t is not None and now_t is not None and now_t > held_t:
        mean_w: float | None = (d.power.held_j - held_j) / (now_t - held_t)
    else:
        mean_w = d.power.last_power_w
    c = d.counter
    c.stale += 1
    c.stale_s += dt
    c.stale_j += delta_j
    if mean_w is None:  # no power to check it against: all of it is in doubt
        c.stale_doubt_j += delta_j
    else:
        c.stale_expected_j += mean_w * dt
        c.stale_doubt_j += abs(delta_j - mean_w * dt)
    b = d.both  # the span in progress is not compared: the counter did not follow the samples in it
    b.mark = (b.both_counter_j, b.both_trapezoid_j, b.both_counter_s, b.both_sampled_s)


def stale_note(d: DeviceState) -> str | None:
    """The note of `d`'s stale stretches, None if it had none."""
    c = d.counter
    if not c.stale:
        return None
    checked = (
        f"power x time said {c.stale_expected_j / 1e3:.3g} kJ"
        if c.stale_expected_j
        else "no power to check it against"
    )
    return (
        f"counter stale {c.stale}x ({c.stale_s:.1f} s in all; held its value, then caught up): "
        f"its catch-up of {c.stale_j / 1e3:.3g} kJ kept as energy, {checked}; "
        f"the difference ({c.stale_doubt_j / 1e3:.2g} kJ) is in the band"
    )
