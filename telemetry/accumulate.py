"""One integration step: a reading (or a failed read) folded into a device's running sums.

Counter differences with resets and wraps, power publications held backwards
over their period (trapezoids for plain readings), gaps closed with their
reason. The Integrator (telemetry.integrator) queues readings and calls these
in order, holding its lock; see its module docstring for the rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from wattlog.gap_reasons import GapReason
from wattlog.records import Gap
from wattlog.telemetry.devicestate import DeviceState, Failure
from wattlog.telemetry.stale import caught_up, stale_stretch
from wattlog.telemetry.types import Reading

SLOW_POWER_MAX_S = 2.5
"""Plain power readings beside a counter (read at the slow rate, ~1 s) form trapezoids this far apart."""


@dataclass(slots=True)
class Steps:
    """Folds readings and failures into device state, and collects the gaps it closes.

    Attributes:
        host: The host label of gaps.
        wall_offset_s: Wall minus monotonic time, to stamp gaps on the wall clock.
        max_gap_s: Longest stretch between plain power readings that is still interpolated.
        closed: Gaps closed since the integrator last took them.
    """

    host: str
    wall_offset_s: float
    max_gap_s: float
    closed: list[Gap] = field(default_factory=list)

    def reading(self, d: DeviceState, reading: Reading) -> None:
        """Integrate one reading of `d` (see Integrator.add)."""
        if d.health.lost_at is not None:
            return
        t = reading.t_s
        if d.last_t is not None and t <= d.last_t:
            return
        energy_mj, power_w = reading.energy_mj, reading.power_w
        counter_t = t if reading.energy_t_s is None else reading.energy_t_s
        power_t = t if reading.power_t_s is None else reading.power_t_s
        new_counter = energy_mj is not None and d.info.has_counter and counter_t != d.counter.last_counter_t
        if new_counter and d.counter.last_counter_t is not None:
            # only a changed value is an update, whatever the driver's times say: AMD stamps every read
            # anew, so a stale counter looks fresh; and without times every read kept as one would fill
            # the updates that resolve window edges with copies (256 reads: 6.4 s)
            new_counter = energy_mj != d.counter.last_counter_mj
            if new_counter and reading.energy_t_s is None:
                d.counter.period.add(counter_t - d.counter.last_counter_t)
        if energy_mj is not None and not new_counter and energy_mj == d.counter.last_counter_mj:
            d.counter.unchanged_until = t  # read again and not moved: how long it held is told at its change
        new_power = power_w is not None and power_t != d.power.last_power_t
        spaced = d.last_t is not None and t - d.last_t > d.max_read_spacing_s(self.max_gap_s)
        if spaced and d.uses_counter:
            assert d.last_t is not None
            d.counter.bridged_s += t - d.last_t  # no reads for a while: the counter's difference spans it
        d.last_t = t
        d.samples += 1
        utilisation = reading.utilisation_pct
        if utilisation is not None and 0.0 <= utilisation <= 100.0:  # what the device did (energy by use)
            d.utilisation_pct_sum += utilisation
            d.utilisation_reads += 1
        if reading.power_limit_w is not None:
            d.limit_w = reading.power_limit_w
        if not (new_counter or new_power):  # the driver still shows the same publication
            d.power.repeats += 1
            d.health.failure_reason = None
            return
        if d.samples == 1 and d.health.first_failure_t is not None:
            self.close_gap(
                d, d.health.first_failure_t, t, GapReason.READ_FAILED.recorded(d.health.failure_reason or "")
            )
        if new_counter:
            assert energy_mj is not None
            self._counter(d, energy_mj, counter_t, t, power_w)
        if new_power:
            assert power_w is not None
            self._power(d, power_w, power_t, t, driver_timed=reading.power_t_s is not None)
        d.health.failure_reason = None

    def _counter(
        self, d: DeviceState, energy_mj: float, counter_t: float, t: float, power_w: float | None
    ) -> None:
        last_mj, last_t = d.counter.last_counter_mj, d.counter.last_counter_t
        if last_mj is None or last_t is None:
            # the first value counts from the driver's update before `t`: that sliver is not ours
            d.counter.start_counter_j = (power_w or 0.0) * max(t - counter_t, 0.0)
        else:
            dt = counter_t - last_t
            delta_mj: float | None = energy_mj - last_mj
            clean, stale = True, False
            # a reset, a counter that wraps, or a step more than the device could draw
            if energy_mj < last_mj or d.info.counter_range_mj or _too_big(d, energy_mj - last_mj, dt):
                delta_mj, clean = self._checked_step(d, energy_mj, last_mj, last_t, dt)
            if delta_mj is not None and clean and stale_stretch(d, last_t):
                caught_up(d, delta_mj / 1e3, dt)
                clean, stale = False, True  # not compared with the samples: the counter did not follow them
            if delta_mj is not None:
                d.counter.counter_j += delta_mj / 1e3
                d.measured_s += dt
            if clean and delta_mj is not None:
                d.both.both_counter_j += delta_mj / 1e3
                d.both.both_counter_s += dt
            elif not stale:  # a stale stretch's catch-up still splits by power (Integrator.energy_at)
                d.counter.updates.clear()  # a reset or a wrap: no edge is resolved across it
            d.counter.changes.add(dt)
        d.counter.last_counter_mj, d.counter.last_counter_t = energy_mj, counter_t
        d.counter.unchanged_until = None
        d.counter.held_at_change = (d.power.held_j, d.power.last_power_t)
        period_s, power_t = d.power.period.median_s, d.power.last_power_t
        if period_s and power_t is not None:  # how far the counter's grid sits from the publications'
            offset_s = (counter_t - power_t) % period_s
            d.both.grid_offset_s = max(d.both.grid_offset_s or 0.0, min(offset_s, period_s - offset_s))
        known_w = power_w if power_w is not None else d.power.last_power_w  # power read at the slow rate
        if known_w is not None:
            d.counter.updates.append((counter_t, d.counter.counter_j, known_w))

    def _power(self, d: DeviceState, power_w: float, power_t: float, t: float, *, driver_timed: bool) -> None:
        """Integrate one new power value: the step since the last, and its statistics as a publication."""
        last_w, last_t = d.power.last_power_w, d.power.last_power_t
        d.power.last_power_w, d.power.last_power_t = power_w, power_t
        if power_w > d.power.p_max_seen_w:
            d.power.p_max_seen_w = power_w
        if last_w is None or last_t is None:
            d.power.start_sampled_j = power_w * max(t - power_t, 0.0)
        else:
            dt = power_t - last_t
            if driver_timed:  # publications come every ~100 ms (the estimate: 1 s) whatever our period
                d.power.period.add(dt)
            # power x time over every step, gaps included: what a counter's catch-up is checked against
            d.power.held_j += power_w * dt if driver_timed else 0.5 * (power_w + last_w) * dt
            max_gap_s = d.max_read_spacing_s(self.max_gap_s)  # paced reads: by publication or update
            if not driver_timed and d.uses_counter:  # a counter's power read at the slow rate (amdsmi)
                max_gap_s = max(max_gap_s, SLOW_POWER_MAX_S)
            # a read failed since the last value: the stretch is the gap the warning said, never filled
            if dt > max_gap_s or d.health.failure_reason is not None:
                if not d.uses_counter:  # a counter bridges the stretch; power alone does not
                    why = d.health.failure_reason or f"no readings for {dt:.3f} s (> {max_gap_s:.3f} s)"
                    self.close_gap(d, last_t, last_t + dt, GapReason.READ_FAILED.recorded(why))
            else:
                # A published value averages the time just before its publication, so it is held
                # backwards over its period; plain readings (no driver time) get trapezoids.
                step_j = power_w * dt if driver_timed else 0.5 * (power_w + last_w) * dt
                d.power.trapezoid_j += step_j
                if not d.uses_counter:
                    d.measured_s += dt
                d.both.both_trapezoid_j += step_j
                d.both.both_sampled_s += dt
            if not driver_timed and math.isclose(power_w, last_w, abs_tol=1e-9):
                return  # without the driver's times, an equal value is taken for the same publication
        d.pubs.add(power_t, power_w)  # the publication's statistics

    def failure(self, d: DeviceState, failure: Failure) -> None:
        """Record one failed read of `d` (see Integrator.record_failure)."""
        if d.health.lost_at is not None:
            return
        d.health.failure_reason = failure.reason
        if d.last_t is None and d.health.first_failure_t is None:
            d.health.first_failure_t = failure.t_s
        if failure.lost:
            d.health.lost_at = d.last_t if d.last_t is not None else d.health.first_failure_t
            d.health.lost_reason = failure.reason
            d.health.gap_count += 1

    def _checked_step(
        self, d: DeviceState, value_mj: float, last_mj: float, start: float, dt: float
    ) -> tuple[float | None, bool]:
        """A counter step that went backwards or may have wrapped: (its energy in mJ, clean).

        The energy is None when the stretch is so long the counter may have wrapped more than
        once (a gap). Not clean: a wrap or a reset, whose energy is not compared with samples.
        """
        delta = value_mj - last_mj
        range_mj = d.info.counter_range_mj
        if range_mj and (p_max := d.p_max_w()) and dt * p_max * 1e3 >= range_mj:
            self.close_gap(
                d, start, start + dt, GapReason.COUNTER_RESET.recorded("may have wrapped more than once")
            )
            return None, False
        if delta >= 0 and not _too_big(d, delta, dt):
            return delta, True
        if delta >= 0:  # an impossible value (ROCm/amdsmi #38, Level Zero's 3.69 TW wrap): not energy
            d.counter.jumps += 1
            reason = GapReason.COUNTER_RESET.recorded(f"jumped {delta / 1e3:.3g} J in {dt:.3g} s: not energy")
            self.close_gap(d, start, start + dt, reason)
            return None, False
        wrapped = delta + range_mj if range_mj else math.inf
        # a wrap adds less than half the range, and no more than twice the power limit could draw
        if wrapped < (range_mj or 0) / 2 and (not d.info.power_limit_w or wrapped <= 2e3 * d.p_max_w() * dt):
            d.counter.wraps += 1
            return wrapped, False
        d.counter.resets += 1
        self.close_gap(
            d, start, start + dt, GapReason.COUNTER_RESET.recorded("reset (energy before the reset unknown)")
        )
        if _too_big(d, value_mj, dt):  # it ran backwards (ROCm/amdsmi #115), not restarting at 0
            return None, False
        return max(value_mj, 0.0), False

    def close_gap(self, d: DeviceState, start: float, end: float, reason: str) -> None:
        """Record a closed gap of `d`: counted, its seconds kept, the row queued for the ledger."""
        d.health.gap_count += 1
        d.health.closed_gap_s += end - start
        self.closed.append(self.gap(d, start, end, reason))

    def gap(self, d: DeviceState, start: float, end: float, reason: str) -> Gap:
        """A gap of `d` between two monotonic times, on the wall clock."""
        return Gap(self.host, d.info.uuid, start + self.wall_offset_s, end + self.wall_offset_s, reason)

    def lost_gap(self, d: DeviceState, start: float, end: float) -> Gap:
        """The gap of a lost `d` between two monotonic times: not counted again (its loss was)."""
        return self.gap(d, start, end, GapReason.DEVICE_LOST.recorded(d.health.lost_reason))


def _too_big(d: DeviceState, step_mj: float, dt: float) -> bool:
    """Whether `step_mj` is more than `d` could draw in `dt` (twice its power bound, plus 1 s of slack).

    The slack covers a counter that updates more coarsely than it is read; a device whose
    power bound is unknown is not judged.
    """
    p_max = d.p_max_w()
    return p_max > 0 and step_mj > 1e3 * p_max * (2 * max(dt, 0.0) + 1.0)
