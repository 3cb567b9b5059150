"""The integrator: exact energy per device from counters (or power trapezoids), with gaps and a band.

Energy of a device with a hardware counter is the sum of the counter's
differences. A counter that goes backwards is a wrap when the device declares
`counter_range_mj` and adding the range gives a plausible step (under half the
range, and under twice the power limit); otherwise it is a reset: it is
counted, the new value is taken as the energy since the reset (a lower bound:
never negative), and the step is recorded as a gap, since what ran before the
reset is unknown.

Across a stretch without readings (a blocked sensor, failed reads) a counter
still measures exactly: the difference spans it, nothing is interpolated. So
for counter devices such a stretch is bridged, not a gap, unless the counter
was reset in it (recorded as a gap) or may have wrapped more than once
(range / P_max shorter than the stretch: recorded as a gap, not counted).
Devices without a counter integrate trapezoids over power readings, and a
stretch longer than `max_gap_periods` periods is a gap: recorded with its
duration, contributing nothing to energy and [0, P_max] to the band.

Both sums are kept where both exist, so the counter/sampled disagreement is
reported (and used to detect phase lock, see telemetry.uncertainty).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from wattlog.clock import Clock, SystemClock
from wattlog.records import EnergyInterval, Gap
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo, Reading
from wattlog.telemetry.uncertainty import (
    BandInputs,
    BandModel,
    PhaseLock,
    counter_disagreement,
    detect_periodic_lock,
)

_PUBLICATIONS_KEPT = 256  # recent distinct published values per device, for lock detection (>= 25 s)
_CHECK_EVERY_PUBLICATIONS = 100
_MIN_COMPARE_S = 10.0  # counter vs sampled compared only after this much common time


@dataclass
class _Totals:
    """Running sums whose differences give an interval."""

    energy_j: float = 0.0
    sampled_j: float = 0.0
    measured_s: float = 0.0
    gap_s: float = 0.0
    publications: int = 0


@dataclass
class _Device:
    info: DeviceInfo
    last_t: float | None = None
    last_power_w: float | None = None
    last_counter_mj: float | None = None
    last_counter_t: float | None = None
    last_power_t: float | None = None
    counter_j: float = 0.0
    trapezoid_j: float = 0.0
    both_counter_j: float = 0.0
    both_trapezoid_j: float = 0.0
    both_s: float = 0.0
    measured_s: float = 0.0
    closed_gap_s: float = 0.0
    gap_count: int = 0
    samples: int = 0
    resets: int = 0
    wraps: int = 0
    bridged_s: float = 0.0
    p_max_seen_w: float = 0.0
    failure_reason: str | None = None
    first_failure_t: float | None = None
    lost_at: float | None = None
    lost_reason: str = ""
    pub_n: int = 0
    pub_mean: float = 0.0
    pub_m2: float = 0.0
    recent: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=_PUBLICATIONS_KEPT))
    checked_at_pub: int = 0
    checked_at_both_s: float = 0.0
    lock: PhaseLock | None = None
    taken: _Totals = field(default_factory=_Totals)

    @property
    def uses_counter(self) -> bool:
        return self.info.has_counter and self.last_counter_mj is not None

    def p_max_w(self) -> float:
        return self.info.power_limit_w or self.p_max_seen_w

    def cv(self) -> float:
        if self.pub_n < 2 or self.pub_mean <= 0:
            return 0.0
        return math.sqrt(self.pub_m2 / (self.pub_n - 1)) / self.pub_mean


class Integrator:
    """Integrates readings into energy per device; thread-safe (add from the sampler, read from others).

    Args:
        devices: The devices readings will come from (others are ignored).
        host: The host label of intervals and gaps.
        clock: Time source: monotonic for open gaps, wall for interval timestamps.
        period_s: The sampler's period, seconds.
        max_gap_periods: Periods without readings after which power is not interpolated.
        band: How the uncertainty band is built (default: BandModel()).
    """

    def __init__(
        self,
        devices: Sequence[DeviceInfo],
        *,
        host: str,
        clock: Clock | None = None,
        period_s: float = 0.025,
        max_gap_periods: float = 4.0,
        band: BandModel | None = None,
    ) -> None:
        self._clock = clock if clock is not None else SystemClock()
        self._host = host
        self._max_gap_s = max_gap_periods * period_s
        self._band = band if band is not None else BandModel()
        self._devices = {d.uuid: _Device(d) for d in devices}
        self._lock = threading.Lock()
        self._wall_offset_s = self._clock.wall() - self._clock.monotonic()
        self._last_take_s = self._clock.monotonic()
        self._closed_gaps: list[Gap] = []

    def add(self, reading: Reading) -> None:
        """Integrate one reading (readings of a device arrive in time order)."""
        with self._lock:
            d = self._devices.get(reading.device)
            if d is None or d.lost_at is not None:
                return
            t = reading.t_s
            if d.last_t is not None and t <= d.last_t:
                return
            if d.last_t is None and d.first_failure_t is not None:
                self._close_gap(d, d.first_failure_t, t, d.failure_reason or "read failed")
            same_span = d.last_counter_t is not None and d.last_counter_t == d.last_power_t
            counter_mj: float | None = None
            if reading.energy_mj is not None and d.info.has_counter:
                if d.last_counter_t is not None:
                    counter_mj = self._counter_step(d, reading.energy_mj, t - d.last_counter_t)
                d.last_counter_mj, d.last_counter_t = reading.energy_mj, t
            if reading.power_w is not None:
                if d.last_power_t is not None:
                    self._power_step(
                        d, reading.power_w, t - d.last_power_t, counter_mj if same_span else None
                    )
                self._publication(d, t, reading.power_w)
                d.last_power_w, d.last_power_t = reading.power_w, t
            d.last_t = t
            d.samples += 1
            d.failure_reason = None

    def record_failure(self, device_uuid: str, t_s: float, reason: str, lost: bool) -> None:
        """A read failed; a lost device is no longer integrated: one open gap from its last reading."""
        with self._lock:
            d = self._devices.get(device_uuid)
            if d is None or d.lost_at is not None:
                return
            d.failure_reason = reason
            if d.last_t is None and d.first_failure_t is None:
                d.first_failure_t = t_s
            if lost:
                d.lost_at = d.last_t if d.last_t is not None else d.first_failure_t
                d.lost_reason = reason
                d.gap_count += 1

    def snapshot(self) -> list[DeviceEnergy]:
        """Cumulative energy, band and caveats of every device (no hardware access)."""
        self._refresh_locks()
        with self._lock:
            now = self._clock.monotonic()
            return [self._energy(d, now) for d in self._devices.values()]

    def total_energy_j(self) -> float:
        """Energy of all devices together: a sum, never an average."""
        return sum(e.energy_j for e in self.snapshot())

    def sampled_energy_j(self, device_uuid: str) -> float:
        """Trapezoid over the device's power readings (beside the counter, for comparison), joules."""
        with self._lock:
            return self._band.calibrated_j(
                self._devices[device_uuid].info, self._devices[device_uuid].trapezoid_j
            )

    def take_intervals(self) -> tuple[list[EnergyInterval], list[Gap]]:
        """Energy per device since the previous take, and the gaps closed since then (wall-clock times)."""
        self._refresh_locks()
        with self._lock:
            now = self._clock.monotonic()
            start, self._last_take_s = self._last_take_s, now
            intervals: list[EnergyInterval] = []
            for d in self._devices.values():
                if d.samples == 0 and d.lost_at is None:
                    continue
                cur = self._totals(d, now)
                prev, d.taken = d.taken, cur
                delta = BandInputs(
                    energy_j=cur.energy_j - prev.energy_j,
                    sampled_j=cur.sampled_j - prev.sampled_j if d.last_power_w is not None else None,
                    from_counter=d.uses_counter,
                    measured_s=cur.measured_s - prev.measured_s,
                    gap_s=cur.gap_s - prev.gap_s,
                    p_max_w=d.p_max_w(),
                    cv=d.cv(),
                    publications=cur.publications - prev.publications,
                    phase_lock=d.lock is not None,
                )
                low, high = self._band.band(d.info, delta)
                intervals.append(
                    EnergyInterval(
                        host=self._host,
                        device=d.info.uuid,
                        kind=d.info.kind,
                        source=d.info.source,
                        start_s=start + self._wall_offset_s,
                        end_s=now + self._wall_offset_s,
                        energy_j=delta.energy_j,
                        low_j=low,
                        high_j=high,
                    )
                )
                if d.lost_at is not None and now > d.lost_at:
                    self._closed_gaps.append(
                        self._gap(d, max(d.lost_at, start), now, f"lost: {d.lost_reason}")
                    )
            gaps, self._closed_gaps = self._closed_gaps, []
            return intervals, gaps

    # -- internals (called with the lock held, except _refresh_locks) --------

    def _counter_step(self, d: _Device, value_mj: float, dt: float) -> float | None:
        """Integrate one counter step; its energy in mJ when clean (no reset, no wrap), else None."""
        assert d.last_counter_mj is not None and d.last_counter_t is not None
        start = d.last_counter_t
        delta = value_mj - d.last_counter_mj
        range_mj = d.info.counter_range_mj
        p_max = d.p_max_w()
        clean = True
        if range_mj and p_max and dt * p_max * 1e3 >= range_mj:
            self._close_gap(d, start, start + dt, "counter may have wrapped more than once")
            return None
        if delta < 0:
            clean = False
            wrapped = delta + range_mj if range_mj else math.inf
            # a wrap adds less than half the range, and no more than twice the power limit could draw
            if wrapped < (range_mj or 0) / 2 and (not d.info.power_limit_w or wrapped <= 2e3 * p_max * dt):
                d.wraps += 1
                delta = wrapped
            else:
                d.resets += 1
                self._close_gap(d, start, start + dt, "counter reset (energy before the reset unknown)")
                delta = max(value_mj, 0.0)
        d.counter_j += delta / 1e3
        d.measured_s += dt
        if dt > self._max_gap_s:
            d.bridged_s += dt
        return delta if clean else None

    def _power_step(self, d: _Device, power_w: float, dt: float, counter_mj: float | None) -> None:
        """Integrate one trapezoid; `counter_mj` is the clean counter step over the same span, if any."""
        assert d.last_power_w is not None and d.last_power_t is not None
        if dt > self._max_gap_s:
            if not d.uses_counter:  # a counter bridges the stretch; power alone does not
                reason = d.failure_reason or f"no readings for {dt:.3f} s (> {self._max_gap_s:.3f} s)"
                self._close_gap(d, d.last_power_t, d.last_power_t + dt, reason)
            return
        trapezoid_j = 0.5 * (power_w + d.last_power_w) * dt
        d.trapezoid_j += trapezoid_j
        if not d.uses_counter:
            d.measured_s += dt
        if counter_mj is not None:
            d.both_counter_j += counter_mj / 1e3
            d.both_trapezoid_j += trapezoid_j
            d.both_s += dt

    def _publication(self, d: _Device, t: float, power_w: float) -> None:
        d.p_max_seen_w = max(d.p_max_seen_w, power_w)
        if d.last_power_w is not None and math.isclose(power_w, d.last_power_w, rel_tol=1e-9, abs_tol=1e-9):
            return  # the sensor still holds the same published value
        d.recent.append((t, power_w))
        d.pub_n += 1
        delta = power_w - d.pub_mean
        d.pub_mean += delta / d.pub_n
        d.pub_m2 += delta * (power_w - d.pub_mean)

    def _close_gap(self, d: _Device, start: float, end: float, reason: str) -> None:
        d.gap_count += 1
        d.closed_gap_s += end - start
        self._closed_gaps.append(self._gap(d, start, end, reason))

    def _gap(self, d: _Device, start: float, end: float, reason: str) -> Gap:
        return Gap(self._host, d.info.uuid, start + self._wall_offset_s, end + self._wall_offset_s, reason)

    def _totals(self, d: _Device, now: float) -> _Totals:
        open_gap_s = now - d.lost_at if d.lost_at is not None and now > d.lost_at else 0.0
        raw_j = d.counter_j if d.uses_counter else d.trapezoid_j
        return _Totals(
            energy_j=self._band.calibrated_j(d.info, raw_j),
            sampled_j=self._band.calibrated_j(d.info, d.trapezoid_j),
            measured_s=d.measured_s,
            gap_s=d.closed_gap_s + open_gap_s,
            publications=d.pub_n,
        )

    def _energy(self, d: _Device, now: float) -> DeviceEnergy:
        tot = self._totals(d, now)
        low, high = self._band.band(
            d.info,
            BandInputs(
                energy_j=tot.energy_j,
                sampled_j=tot.sampled_j if d.last_power_w is not None else None,
                from_counter=d.uses_counter,
                measured_s=tot.measured_s,
                gap_s=tot.gap_s,
                p_max_w=d.p_max_w(),
                cv=d.cv(),
                publications=tot.publications,
                phase_lock=d.lock is not None,
            ),
        )
        return DeviceEnergy(
            device=d.info,
            energy_j=tot.energy_j,
            low_j=low,
            high_j=high,
            power_w=d.last_power_w,
            samples=d.samples,
            gap_count=d.gap_count,
            gap_s=tot.gap_s,
            lost=d.lost_at is not None,
            notes=self._notes(d),
        )

    def _notes(self, d: _Device) -> tuple[str, ...]:
        notes: list[str] = []
        if d.lock is not None:
            notes.append(d.lock.note(self._band.publication_period_s))
        if d.uses_counter and d.both_counter_j > 0:
            rel = (d.both_trapezoid_j - d.both_counter_j) / d.both_counter_j
            notes.append(f"counter vs sampled power over {d.both_s:.0f} s: sampled {rel:+.2%}")
        if d.resets:
            notes.append(f"counter went backwards {d.resets}x (reset): counted from the new value, never < 0")
        if d.wraps:
            notes.append(f"counter wrapped {d.wraps}x at {d.info.counter_range_mj:g} mJ")
        if d.bridged_s:
            notes.append(f"{d.bridged_s:.1f} s without readings bridged exactly by the counter")
        if d.lost_at is not None:
            notes.append(f"lost: {d.lost_reason}")
        return tuple(notes)

    def _refresh_locks(self) -> None:
        """Re-run phase-lock detection where enough new publications arrived (outside the lock)."""
        with self._lock:
            todo = [
                (d, list(d.recent), d.both_counter_j, d.both_trapezoid_j, d.both_s, d.cv(), d.pub_n)
                for d in self._devices.values()
                if d.lock is None
                and self._band.fraction_seen(d.info) < 1
                and (
                    d.pub_n - d.checked_at_pub >= _CHECK_EVERY_PUBLICATIONS
                    or d.both_s - d.checked_at_both_s >= _MIN_COMPARE_S
                )
            ]
        for d, recent, both_c, both_t, both_s, cv, pub_n in todo:
            found = detect_periodic_lock([t for t, _ in recent], [p for _, p in recent])
            if found is None and both_s >= _MIN_COMPARE_S:
                expected = max(self._band.sampling_rel(cv, pub_n), 0.02)
                rel = counter_disagreement(both_c, both_t, expected)
                if rel is not None:
                    # a locked window sees one phase: the load's period is then the publication period
                    found = PhaseLock(
                        self._band.publication_period_s, abs(rel), f"sampled {rel:+.0%} vs counter"
                    )
            with self._lock:
                d.checked_at_pub, d.checked_at_both_s = pub_n, both_s
                d.lock = d.lock or found
