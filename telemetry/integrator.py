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

import bisect
import math
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from wattlog.clock import Clock, SystemClock
from wattlog.records import EnergyFigure, EnergyInterval, Gap
from wattlog.telemetry.publications import PublicationPeriod
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo, Reading, SensorProfile
from wattlog.telemetry.uncertainty import (
    BandInputs,
    BandModel,
    PhaseLock,
    Repetition,
    analyse_repetition,
    counter_disagreement,
)

_PUBLICATIONS_KEPT = 256  # recent distinct published values per device, for lock detection (>= 25 s)
_CHECK_EVERY_PUBLICATIONS = 100
_MIN_COMPARE_S = 10.0  # counter vs sampled compared only after this much common time
_TRUST_COMPARE_S = 60.0  # span before a counter/samples difference proves a true-power counter
_INTERVALS_KEPT = 64  # recent times between the driver's publications, for its publication period
_UPDATES_KEPT = 256  # recent counter updates (time, running joules, power then), to resolve window edges
_GAP_PUBLICATIONS = 2.5  # driver-timed power: a stretch this many publication periods long is a gap
# Readings held before the sampler integrates them itself: ~6 s of 8 GPUs read 10 times a second.
_PENDING_MAX = 512


@dataclass(frozen=True, slots=True)
class _Totals:
    """Running sums whose differences give an interval."""

    energy_j: float = 0.0
    sampled_j: float = 0.0
    measured_s: float = 0.0
    gap_s: float = 0.0
    publications: int = 0


@dataclass(frozen=True, slots=True)
class EdgeMark:
    """One device at one window edge: its running totals, and the tail since its last update.

    Attributes:
        t_s: The edge, monotonic seconds.
        totals: Running sums up to the last counter update (or publication) before t_s.
        tail_j: Energy from there to t_s, from the latest power reading (calibrated), joules.
        tail_s: Length of that tail, seconds.
    """

    t_s: float
    totals: _Totals
    tail_j: float
    tail_s: float


@dataclass(frozen=True, slots=True)
class WindowDevice:
    """One device between two edges: its energy figure (edge uncertainty in the band), unmeasured seconds."""

    device: DeviceInfo
    figure: EnergyFigure
    gap_s: float

    @property
    def energy_j(self) -> float:
        """Best estimate, joules."""
        return self.figure.energy_j

    @property
    def low_j(self) -> float:
        """Lower end of the band, joules."""
        return self.figure.low_j

    @property
    def high_j(self) -> float:
        """Upper end of the band, joules."""
        return self.figure.high_j


@dataclass(frozen=True, slots=True)
class _Failure:
    """A failed read, queued in order with the readings (see Integrator.add)."""

    device_uuid: str
    t_s: float
    reason: str
    lost: bool


@dataclass(slots=True)
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
    measured_s: float = 0.0
    closed_gap_s: float = 0.0
    gap_count: int = 0
    samples: int = 0
    resets: int = 0
    wraps: int = 0
    bridged_s: float = 0.0
    both_counter_s: float = 0.0
    both_sampled_s: float = 0.0
    start_counter_j: float = 0.0
    start_sampled_j: float = 0.0
    repeats: int = 0
    period: PublicationPeriod = field(default_factory=lambda: PublicationPeriod(_INTERVALS_KEPT, 5))
    limit_w: float | None = None
    updates: deque[tuple[float, float, float]] = field(default_factory=lambda: deque(maxlen=_UPDATES_KEPT))
    p_max_seen_w: float = 0.0
    failure_reason: str | None = None
    first_failure_t: float | None = None
    lost_at: float | None = None
    lost_reason: str = ""
    pub_n: int = 0
    pub_mean: float = 0.0
    pub_m2: float = 0.0
    pub_d2: float = 0.0  # sum of squared differences of successive publications
    recent: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=_PUBLICATIONS_KEPT))
    checked_at_pub: int = 0
    checked_at_both_s: float = 0.0
    lock: PhaseLock | None = None
    repetition: Repetition | None = None
    counter_true: bool = False  # the counter saw what the samples did not: it integrates true power
    taken: _Totals = field(default_factory=_Totals)

    @property
    def uses_counter(self) -> bool:
        return self.info.has_counter and self.last_counter_mj is not None

    def p_max_w(self) -> float:
        return self.limit_w or self.info.power_limit_w or self.p_max_seen_w

    def publication_period_s(self) -> float | None:
        """Median time between the driver's publications (as Zeus infers it), once 5 are seen."""
        return self.period.period_s

    def max_read_spacing_s(self, max_gap_s: float) -> float:
        """Longest stretch between reads that is not a gap: `max_gap_s`, or 2.5 publications of a
        driver-timed device (a sampler may read it once per publication, not every tick)."""
        median_s = self.period.median_s
        return max_gap_s if median_s is None else max(max_gap_s, _GAP_PUBLICATIONS * median_s)

    def cv(self) -> float:
        """Variation of the power from one publication to the next, relative to the mean.

        The von Neumann estimate, sqrt(mean squared successive difference / 2): what a
        window of 25 ms in 100 ms can miss is the power's variation within ~100 ms,
        not the slow swings (checkpoint stalls) that publications every 100 ms follow.
        """
        if self.pub_n < 2 or self.pub_mean <= 0:
            return 0.0
        return math.sqrt(self.pub_d2 / (2 * (self.pub_n - 1))) / self.pub_mean


class Integrator:
    """Integrates readings into energy per device; thread-safe (add from the sampler, read from others).

    `add` and `record_failure` only queue: the queue is integrated in order, in one batch, by
    whichever call next reads a figure (a scrape, a flush, a window edge), or by `add` once
    512 are held. Every figure read is therefore exact to the last reading added.

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
        # Readings and failures wait here and are integrated in order, in one batch, before any
        # figure is read (every public method drains first) or once _PENDING_MAX are held. The
        # sampler wakes ~10 times a second and every cache is cold after its sleep: integrating
        # each reading there cost ~12 us of CPU on this project's VM, against ~3 us in a batch.
        self._pending: deque[Reading | _Failure] = deque()  # append and popleft are atomic
        self._integration_cpu_s = 0.0

    @property
    def integration_cpu_s(self) -> float:
        """CPU time spent integrating queued readings, on whichever thread drained them, seconds."""
        return self._integration_cpu_s

    def add(self, reading: Reading) -> None:
        """Queue one reading (readings of a device arrive in time order); integrated before any read.

        A reading whose driver times (`energy_t_s`, `power_t_s`) repeat the previous
        ones brings no new publication: it is counted and costs nothing more. New
        values are integrated on the driver's times where given, else on `t_s`.
        """
        self._queue(reading)

    def record_failure(self, device_uuid: str, t_s: float, reason: str, lost: bool) -> None:
        """A read failed; a lost device is no longer integrated: one open gap from its last reading."""
        self._queue(_Failure(device_uuid, t_s, reason, lost))

    def _queue(self, item: Reading | _Failure) -> None:
        """Queue a reading or a failure; integrate the queue at once when it is full."""
        self._pending.append(item)
        if len(self._pending) >= _PENDING_MAX:
            with self._lock:
                self._drain()

    @contextmanager
    def _current(self) -> Iterator[None]:
        """Hold the lock, with every queued reading integrated: how every figure is read."""
        with self._lock:
            self._drain()
            yield

    def _drain(self) -> None:
        """Integrate every queued reading and failure, in order (the caller holds the lock)."""
        pending = self._pending
        if not pending:
            return
        cpu0_s = time.thread_time()
        while pending:
            item = pending.popleft()
            if isinstance(item, _Failure):
                self._failure(item)
            else:
                self._integrate(item)
        self._integration_cpu_s += time.thread_time() - cpu0_s

    def _integrate(self, reading: Reading) -> None:
        """Integrate one reading (see add)."""
        d = self._devices.get(reading.device)
        if d is None or d.lost_at is not None:
            return
        t = reading.t_s
        if d.last_t is not None and t <= d.last_t:
            return
        energy_mj, power_w = reading.energy_mj, reading.power_w
        counter_t = t if reading.energy_t_s is None else reading.energy_t_s
        power_t = t if reading.power_t_s is None else reading.power_t_s
        new_counter = energy_mj is not None and d.info.has_counter and counter_t != d.last_counter_t
        new_power = power_w is not None and power_t != d.last_power_t
        spaced = d.last_t is not None and t - d.last_t > d.max_read_spacing_s(self._max_gap_s)
        if spaced and d.uses_counter:
            assert d.last_t is not None
            d.bridged_s += t - d.last_t  # no reads for a while: the counter's difference spans it
        d.last_t = t
        d.samples += 1
        if reading.power_limit_w is not None:
            d.limit_w = reading.power_limit_w
        if not (new_counter or new_power):  # the driver still shows the same publication
            d.repeats += 1
            d.failure_reason = None
            return
        if d.samples == 1 and d.first_failure_t is not None:
            self._close_gap(d, d.first_failure_t, t, d.failure_reason or "read failed")
        if new_counter:
            assert energy_mj is not None
            self._counter(d, energy_mj, counter_t, t, power_w)
        if new_power:
            assert power_w is not None
            self._power(d, power_w, power_t, t, driver_timed=reading.power_t_s is not None)
        d.failure_reason = None

    def _counter(
        self, d: _Device, energy_mj: float, counter_t: float, t: float, power_w: float | None
    ) -> None:
        last_mj, last_t = d.last_counter_mj, d.last_counter_t
        if last_mj is None or last_t is None:
            # the first value counts from the driver's update before `t`: that sliver is not ours
            d.start_counter_j = (power_w or 0.0) * max(t - counter_t, 0.0)
        else:
            dt = counter_t - last_t
            delta_mj: float | None = energy_mj - last_mj
            clean = True
            if energy_mj < last_mj or d.info.counter_range_mj:  # a reset, or a counter that wraps
                delta_mj, clean = self._checked_step(d, energy_mj, last_mj, last_t, dt)
            if delta_mj is not None:
                d.counter_j += delta_mj / 1e3
                d.measured_s += dt
            if clean and delta_mj is not None:
                d.both_counter_j += delta_mj / 1e3
                d.both_counter_s += dt
            else:
                d.updates.clear()  # a reset or a wrap: no edge is resolved across it
        d.last_counter_mj, d.last_counter_t = energy_mj, counter_t
        if power_w is not None:
            d.updates.append((counter_t, d.counter_j, power_w))

    def _power(self, d: _Device, power_w: float, power_t: float, t: float, *, driver_timed: bool) -> None:
        """Integrate one new power value: the step since the last, and its statistics as a publication."""
        last_w, last_t = d.last_power_w, d.last_power_t
        d.last_power_w, d.last_power_t = power_w, power_t
        if power_w > d.p_max_seen_w:
            d.p_max_seen_w = power_w
        if last_w is None or last_t is None:
            d.start_sampled_j = power_w * max(t - power_t, 0.0)
        else:
            dt = power_t - last_t
            if driver_timed:  # publications come every ~100 ms (the estimate: 1 s) whatever our period
                d.period.add(dt)
            max_gap_s = d.max_read_spacing_s(self._max_gap_s) if driver_timed else self._max_gap_s
            if dt > max_gap_s:
                if not d.uses_counter:  # a counter bridges the stretch; power alone does not
                    reason = d.failure_reason or f"no readings for {dt:.3f} s (> {max_gap_s:.3f} s)"
                    self._close_gap(d, last_t, last_t + dt, reason)
            else:
                # A published value averages the time just before its publication, so it is held
                # backwards over its period; plain readings (no driver time) get trapezoids.
                step_j = power_w * dt if driver_timed else 0.5 * (power_w + last_w) * dt
                d.trapezoid_j += step_j
                if not d.uses_counter:
                    d.measured_s += dt
                d.both_trapezoid_j += step_j
                d.both_sampled_s += dt
            if not driver_timed and math.isclose(power_w, last_w, abs_tol=1e-9):
                return  # without the driver's times, an equal value is taken for the same publication
        # the publication's statistics: the recent ones, mean, variance, successive differences
        recent = d.recent
        if recent:
            d.pub_d2 += (power_w - recent[-1][1]) ** 2
        recent.append((power_t, power_w))
        d.pub_n += 1
        delta = power_w - d.pub_mean
        d.pub_mean += delta / d.pub_n
        d.pub_m2 += delta * (power_w - d.pub_mean)

    def _failure(self, failure: _Failure) -> None:
        """Record one failed read (see record_failure)."""
        d = self._devices.get(failure.device_uuid)
        if d is None or d.lost_at is not None:
            return
        d.failure_reason = failure.reason
        if d.last_t is None and d.first_failure_t is None:
            d.first_failure_t = failure.t_s
        if failure.lost:
            d.lost_at = d.last_t if d.last_t is not None else d.first_failure_t
            d.lost_reason = failure.reason
            d.gap_count += 1

    def snapshot(self) -> list[DeviceEnergy]:
        """Cumulative energy, band and caveats of every device (no hardware access)."""
        self._refresh_locks()
        with self._current():
            now = self._clock.monotonic()
            return [self._energy(d, now) for d in self._devices.values()]

    def total_energy_j(self) -> float:
        """Energy of all devices together: a sum, never an average."""
        return sum(e.energy_j for e in self.snapshot())

    def sampled_energy_j(self, device_uuid: str) -> float:
        """Trapezoid over the device's power readings (beside the counter, for comparison), joules."""
        with self._current():
            return self._band.calibrated_j(
                self._devices[device_uuid].info, self._devices[device_uuid].trapezoid_j
            )

    def take_intervals(self) -> tuple[list[EnergyInterval], list[Gap]]:
        """Energy per device since the previous take, and the gaps closed since then (wall-clock times)."""
        self._refresh_locks()
        with self._current():
            now = self._clock.monotonic()
            start, self._last_take_s = self._last_take_s, now
            intervals: list[EnergyInterval] = []
            for d in self._devices.values():
                if d.samples == 0 and d.lost_at is None:
                    continue
                cur = self._totals(d, now)
                prev, d.taken = d.taken, cur
                delta = self._inputs(d, cur, prev)
                band = self._band.band_parts(d.info, delta)
                intervals.append(
                    EnergyInterval(
                        host=self._host,
                        device=d.info.uuid,
                        kind=d.info.kind,
                        source=d.info.source,
                        start_s=start + self._wall_offset_s,
                        end_s=now + self._wall_offset_s,
                        energy_j=delta.energy_j,
                        low_j=band.low_j,
                        high_j=band.high_j,
                        random_low_j=band.random_low_j,
                        random_high_j=band.random_high_j,
                    )
                )
                if d.lost_at is not None and now > d.lost_at:
                    self._closed_gaps.append(
                        self._gap(d, max(d.lost_at, start), now, f"lost: {d.lost_reason}")
                    )
            gaps, self._closed_gaps = self._closed_gaps, []
            return intervals, gaps

    def mark(self, t_s: float) -> dict[str, EdgeMark]:
        """Each live device's energy at `t_s` (monotonic), for a window edge.

        Exact to the last counter update (or publication) before `t_s`; the stretch
        from there to `t_s` is taken from the latest power reading, and bounded by
        [0, P_max] in the window's band. Cheap: called on the training thread, it runs no
        lock detection (the band uses what the last flush found).
        """
        with self._current():
            return {
                d.info.uuid: self._mark(d, t_s)
                for d in self._devices.values()
                if d.samples and d.lost_at is None
            }

    def window(self, start: Mapping[str, EdgeMark], end: Mapping[str, EdgeMark]) -> list[WindowDevice]:
        """Energy and band of every device marked at both edges, between them."""
        out: list[WindowDevice] = []
        with self._current():
            for uuid, b in end.items():
                a = start.get(uuid)
                d = self._devices.get(uuid)
                if a is None or d is None:
                    continue
                low, high = self._band.band(d.info, self._inputs(d, b.totals, a.totals))
                core_j = b.totals.energy_j - a.totals.energy_j
                p_max = d.p_max_w()
                energy_j = core_j + b.tail_j - a.tail_j
                # the tails are power x time: the truth of each lies in [0, P_max x its length]
                figure = EnergyFigure(
                    d.info.kind, d.info.source, energy_j, low - p_max * a.tail_s, high + p_max * b.tail_s
                )
                out.append(WindowDevice(d.info, figure, b.totals.gap_s - a.totals.gap_s))
        return out

    def uses_counter(self, device_uuid: str) -> bool:
        """Whether the device's energy comes from its hardware counter."""
        with self._current():
            d = self._devices.get(device_uuid)
            return d is not None and d.uses_counter

    def energy_at(self, device_uuid: str, t_s: float) -> float | None:
        """A counter device's running energy at `t_s` (calibrated joules), once the update after `t_s` is in.

        The counter's difference over the update (u_a, u_b] that contains `t_s` is
        split by the power published at u_a and at u_b: a load that changed level
        once inside it changed where the counter's mean says, so the part before
        `t_s` follows exactly (and a load that did not change splits linearly).
        The result always adds up to the counter's own difference. None while no
        update after `t_s` has been read (or for a device without a counter).
        """
        with self._current():
            d = self._devices.get(device_uuid)
            if d is None or not d.updates or d.updates[-1][0] <= t_s or d.updates[0][0] > t_s:
                return None
            updates = d.updates
            i = max(bisect.bisect_right(updates, t_s, key=lambda u: u[0]) - 1, 0)
            (u_a, e_a, p_a), (u_b, e_b, p_b) = updates[i], updates[i + 1]
            return self._band.calibrated_j(d.info, e_a + _split(u_a, u_b, e_b - e_a, p_a, p_b, t_s))

    def finish(self, t_s: float) -> None:
        """Extend every live device's energy to `t_s` from its latest power (the final edge, at close)."""
        with self._current():
            for d in self._devices.values():
                if not d.samples or d.lost_at is not None or d.last_power_w is None:
                    continue
                if d.last_counter_t is not None and d.uses_counter and t_s > d.last_counter_t:
                    d.counter_j += d.last_power_w * (t_s - d.last_counter_t)
                    d.measured_s += t_s - d.last_counter_t
                    d.last_counter_t = t_s
                if d.last_power_t is not None and t_s > d.last_power_t:
                    d.trapezoid_j += d.last_power_w * (t_s - d.last_power_t)
                    if not d.uses_counter:
                        d.measured_s += t_s - d.last_power_t
                    d.last_power_t = t_s

    # -- internals (called with the lock held, except _refresh_locks) --------

    def _profile(self, d: _Device) -> SensorProfile:
        """The sensor profile whose publication period and observed fraction `d`'s analysis assumes."""
        return self._band.profile(d.info) or self._band.gpu_profile

    def _mark(self, d: _Device, t_s: float) -> EdgeMark:
        last_t = d.last_counter_t if d.uses_counter else d.last_power_t
        tail_s = max(t_s - last_t, 0.0) if last_t is not None else 0.0
        tail_j = self._band.calibrated_j(d.info, (d.last_power_w or 0.0) * tail_s)
        return EdgeMark(t_s, self._totals(d, t_s), tail_j, tail_s)

    def _checked_step(
        self, d: _Device, value_mj: float, last_mj: float, start: float, dt: float
    ) -> tuple[float | None, bool]:
        """A counter step that went backwards or may have wrapped: (its energy in mJ, clean).

        The energy is None when the stretch is so long the counter may have wrapped more than
        once (a gap). Not clean: a wrap or a reset, whose energy is not compared with samples.
        """
        delta = value_mj - last_mj
        range_mj = d.info.counter_range_mj
        if range_mj and (p_max := d.p_max_w()) and dt * p_max * 1e3 >= range_mj:
            self._close_gap(d, start, start + dt, "counter may have wrapped more than once")
            return None, False
        if delta >= 0:
            return delta, True
        wrapped = delta + range_mj if range_mj else math.inf
        # a wrap adds less than half the range, and no more than twice the power limit could draw
        if wrapped < (range_mj or 0) / 2 and (not d.info.power_limit_w or wrapped <= 2e3 * d.p_max_w() * dt):
            d.wraps += 1
            return wrapped, False
        d.resets += 1
        self._close_gap(d, start, start + dt, "counter reset (energy before the reset unknown)")
        return max(value_mj, 0.0), False

    def _close_gap(self, d: _Device, start: float, end: float, reason: str) -> None:
        d.gap_count += 1
        d.closed_gap_s += end - start
        self._closed_gaps.append(self._gap(d, start, end, reason))

    def _gap(self, d: _Device, start: float, end: float, reason: str) -> Gap:
        return Gap(self._host, d.info.uuid, start + self._wall_offset_s, end + self._wall_offset_s, reason)

    def _totals(self, d: _Device, now: float) -> _Totals:
        open_gap_s = now - d.lost_at if d.lost_at is not None and now > d.lost_at else 0.0
        sampled_j = max(d.trapezoid_j - d.start_sampled_j, 0.0)
        raw_j = max(d.counter_j - d.start_counter_j, 0.0) if d.uses_counter else sampled_j
        return _Totals(
            energy_j=self._band.calibrated_j(d.info, raw_j),
            sampled_j=self._band.calibrated_j(d.info, sampled_j),
            measured_s=d.measured_s,
            gap_s=d.closed_gap_s + open_gap_s,
            publications=d.pub_n,
        )

    def _inputs(self, d: _Device, cur: _Totals, prev: _Totals) -> BandInputs:
        """What the band of the span between two totals of `d` depends on."""
        return BandInputs(
            energy_j=cur.energy_j - prev.energy_j,
            sampled_j=cur.sampled_j - prev.sampled_j if d.last_power_w is not None else None,
            from_counter=d.uses_counter,
            measured_s=cur.measured_s - prev.measured_s,
            gap_s=cur.gap_s - prev.gap_s,
            p_max_w=d.p_max_w(),
            cv=d.cv(),
            publications=cur.publications - prev.publications,
            phase_lock=d.lock is not None,
            alias_rel=d.repetition.alias_rel if d.repetition is not None else None,
            counter_true=d.counter_true,
        )

    def _energy(self, d: _Device, now: float) -> DeviceEnergy:
        tot = self._totals(d, now)
        band = self._band.band_parts(d.info, self._inputs(d, tot, _Totals()))
        figure = EnergyFigure(
            d.info.kind,
            d.info.source,
            tot.energy_j,
            band.low_j,
            band.high_j,
            band.random_low_j,
            band.random_high_j,
        )
        return DeviceEnergy(
            device=d.info,
            figure=figure,
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
            notes.append(d.lock.note(d.publication_period_s() or self._profile(d).publication_period_s))
        elif d.repetition is not None:
            notes.append(d.repetition.note())
        compared = _compare(d)
        if compared is not None:
            rel, span_s = compared
            notes.append(f"counter vs sampled power over {span_s:.0f} s: sampled {rel:+.2%}")
        period_s = d.publication_period_s()
        if period_s is not None:
            notes.append(
                f"power published every {period_s * 1e3:.0f} ms (the driver's timestamps); "
                f"{d.repeats} of {d.samples} reads repeated a publication"
            )
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
        """Re-run repetition and lock analysis where enough new publications arrived (outside the lock).

        Run at every snapshot and flush, as often as the live agent asks: a repetition
        whose phases cover the load (harmless) only bounds the band; a lock is flagged
        when that bound exceeds `BandModel.lock_rel`, or when the counter and the
        samples disagree beyond sampling error (then the counter is trusted).
        """
        band = self._band
        with self._current():
            todo = [
                (d, list(d.recent), _compare(d), d.cv(), d.pub_n, d.publication_period_s(), d.repetition)
                for d in self._devices.values()
                if band.fraction_seen(d.info) < 1
                and (
                    d.pub_n - d.checked_at_pub >= _CHECK_EVERY_PUBLICATIONS
                    or _both_s(d) - d.checked_at_both_s >= _MIN_COMPARE_S
                )
            ]
        for d, recent, compared, cv, pub_n, period_s, seen in todo:
            profile = self._profile(d)
            period_s = period_s or profile.publication_period_s
            repetition = analyse_repetition(
                [t for t, _ in recent],
                [p for _, p in recent],
                publication_period_s=period_s,
                observed_fraction=profile.observed_fraction,
            )
            found: PhaseLock | None = None
            if repetition is not None and repetition.alias_rel > band.lock_rel:
                found = PhaseLock(
                    repetition.load_period_s,
                    repetition.score,
                    f"published power repeats at {repetition.phases} phases of the load, "
                    f"readings may be off by up to {repetition.alias_rel:.0%}",
                )
            disagrees = False
            if compared is not None and compared[1] >= _MIN_COMPARE_S:
                # a disagreement within what a repetition seen so far may cause is no lock
                aliasing = max((r.alias_rel for r in (repetition, seen) if r is not None), default=0.0)
                expected = max(band.sampling_rel(cv, pub_n), aliasing, 0.02)
                # a counter summing only the observed windows equals the samples: one that
                # differs by more integrates true power, so aliasing does not touch its figure
                disagrees = compared[1] >= _TRUST_COMPARE_S and abs(compared[0]) > band.counter_evidence_rel
                rel = counter_disagreement(1.0, 1.0 + compared[0], expected)
                if rel is not None:
                    # a locked window sees one phase: the load's period is then the publication period
                    found = found or PhaseLock(period_s, abs(rel), f"sampled {rel:+.0%} vs counter")
            with self._lock:
                d.checked_at_pub, d.checked_at_both_s = pub_n, compared[1] if compared else 0.0
                if repetition is not None and (
                    d.repetition is None or repetition.alias_rel >= d.repetition.alias_rel
                ):
                    d.repetition = repetition  # the widest bound seen stays
                d.counter_true = d.counter_true or disagrees
                d.lock = d.lock or found


def _split(u_a: float, u_b: float, delta_j: float, p_a: float, p_b: float, t_s: float) -> float:
    """Energy of (u_a, t_s] of `delta_j` over (u_a, u_b]: one level change p_a -> p_b, placed by the mean."""
    span_s = u_b - u_a
    if span_s <= 0:
        return 0.0
    if abs(p_a - p_b) <= 1e-6 * max(abs(p_a), abs(p_b), 1.0):
        return delta_j * (t_s - u_a) / span_s
    # p_a until tau, p_b after: p_a (tau - u_a) + p_b (u_b - tau) = delta_j
    tau = (delta_j - p_b * u_b + p_a * u_a) / (p_a - p_b)
    tau = min(max(tau, u_a), u_b)

    def model_j(t: float) -> float:
        return p_a * (min(t, tau) - u_a) + p_b * max(t - tau, 0.0)

    whole_j = model_j(u_b)
    if whole_j <= 0:
        return delta_j * (t_s - u_a) / span_s
    return delta_j * model_j(t_s) / whole_j  # scaled to the counter's own difference


def _compare(d: _Device) -> tuple[float, float] | None:
    """(sampled vs counter mean power, relative; the shorter of their spans in s), where both exist."""
    if not (d.uses_counter and d.both_counter_j > 0 and d.both_counter_s > 0 and d.both_sampled_s > 0):
        return None
    counter_w = d.both_counter_j / d.both_counter_s
    sampled_w = d.both_trapezoid_j / d.both_sampled_s
    return sampled_w / counter_w - 1, min(d.both_counter_s, d.both_sampled_s)


def _both_s(d: _Device) -> float:
    compared = _compare(d)
    return compared[1] if compared is not None else 0.0
