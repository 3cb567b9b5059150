"""The integrator: exact energy per device from counters (or power trapezoids), with gaps and a band.

Energy of a device with a hardware counter is the sum of the counter's
differences. A counter that goes backwards is a wrap when the device declares
`counter_range_mj` and adding the range gives a plausible step (under half the
range, and under twice the power limit); otherwise it is a reset: it is
counted, the new value is taken as the energy since the reset (a lower bound:
never negative), and the step is recorded as a gap, since what ran before the
reset is unknown. A step (or a new value after a reset) larger than the device
could draw (twice its power bound over the step, plus one second of it) is not
energy: a counter that ran backwards (ROCm/amdsmi #115) or jumped to an
impossible value (#38; Level Zero's 3.69 TW wrap) is counted as a reset and
its step is a gap, never negative or terawatt energy.

Only a changed counter value is an update, whatever its timestamps say (AMD
stamps every read anew): a value held for several updates and then moving on is
a stale stretch whose catch-up is kept as energy (telemetry.stale).

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
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

from wattlog.clock import Clock, SystemClock
from wattlog.records import BandRevision, EnergyFigure, EnergyInterval, Gap, millijoules
from wattlog.telemetry.accumulate import Steps
from wattlog.telemetry.devicestate import DeviceState, EdgeMark, Failure, Totals
from wattlog.telemetry.lockcheck import LockCheck, due, notes
from wattlog.telemetry.revisions import Revisions, evidence_of
from wattlog.telemetry.scalecheck import judge_scale
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo, Reading, SensorProfile
from wattlog.telemetry.uncertainty import BandInputs, BandModel

__all__ = ["EdgeMark", "Integrator"]

# Readings held before the sampler integrates them itself: ~6 s of 8 GPUs read 10 times a second.
_PENDING_MAX = 512


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
        self._devices = {d.uuid: DeviceState(d) for d in devices}
        self._lock = threading.Lock()
        self._wall_offset_s = self._clock.wall() - self._clock.monotonic()
        self._last_take_s = self._clock.monotonic()
        self._steps = Steps(host, self._wall_offset_s, self._max_gap_s)
        self._revisions = Revisions(host)
        # Readings and failures wait here and are integrated in order, in one batch, before any
        # figure is read (every public method drains first) or once _PENDING_MAX are held. The
        # sampler wakes ~10 times a second and every cache is cold after its sleep: integrating
        # each reading there cost ~12 us of CPU on this project's VM, against ~3 us in a batch.
        self._pending: deque[Reading | Failure] = deque()  # append and popleft are atomic
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
        self._queue(Failure(device_uuid, t_s, reason, lost))

    def _queue(self, item: Reading | Failure) -> None:
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
            d = self._devices.get(item.device_uuid if isinstance(item, Failure) else item.device)
            if d is None:
                continue
            if isinstance(item, Failure):
                self._steps.failure(d, item)
            else:
                self._steps.reading(d, item)
        self._integration_cpu_s += time.thread_time() - cpu0_s

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
            d = self._devices[device_uuid]
            return self._band.calibrated_j(d.info, d.power.trapezoid_j)

    def take_intervals(self) -> tuple[list[EnergyInterval], list[Gap]]:
        """Energy per device since the previous take, and the gaps closed since then (wall-clock times)."""
        self._refresh_locks()
        with self._current():
            now = self._clock.monotonic()
            start, self._last_take_s = self._last_take_s, now
            intervals: list[EnergyInterval] = []
            for d in self._devices.values():
                if d.samples == 0 and d.health.lost_at is None:
                    continue
                cur = self._totals(d, now)
                prev, d.taken = d.taken, cur
                delta = self._inputs(d, cur, prev)
                if d.startup is None and delta.from_counter and d.check_due() and delta.sampled_j is not None:
                    d.startup = (delta.energy_j, delta.sampled_j, delta.measured_s)
                    if d.swap_untrusted_counter():  # this interval too is power x time
                        prev = replace(prev, energy_j=prev.sampled_j)
                        d.taken = cur = self._totals(d, now)
                        delta = self._inputs(d, cur, prev)
                evidence = evidence_of(delta)
                whole = self._inputs(d, prev, Totals())  # the rows taken so far follow the evidence
                self._revisions.revise(d.info.uuid, whole, self._band.band_parts(d.info, whole))
                band = self._band.band_parts(d.info, delta)
                figure = EnergyFigure(
                    d.info.kind, d.info.source, delta.energy_j,
                    band.low_j, band.high_j, band.random_low_j, band.random_high_j,
                ).to_millijoules(millijoules(cur.energy_j) - millijoules(prev.energy_j))  # fmt: skip
                wall = (start + self._wall_offset_s, now + self._wall_offset_s)
                intervals.append(EnergyInterval(self._host, d.info.uuid, *wall, figure))
                self._revisions.written(intervals[-1], evidence)
                if d.health.lost_at is not None and now > d.health.lost_at:
                    self._steps.closed.append(self._steps.lost_gap(d, max(d.health.lost_at, start), now))
            gaps, self._steps.closed = self._steps.closed, []
            return intervals, gaps

    def take_revisions(self) -> list[BandRevision]:
        """The revisions of earlier rows' band that `take_intervals` recorded since the last call."""
        with self._lock:
            return self._revisions.take()

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
                if d.samples and d.health.lost_at is None
            }

    def window(self, start: Mapping[str, EdgeMark], end: Mapping[str, EdgeMark]) -> dict[str, EnergyFigure]:
        """The figure of every device marked at both edges, between them, by device UUID.

        The band carries the edges' uncertainty; seconds the device went unmeasured in
        between are in it too (as for a flush interval), and in the integrator's gaps.
        """
        out: dict[str, EnergyFigure] = {}
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
                out[uuid] = EnergyFigure(
                    d.info.kind, d.info.source, energy_j, low - p_max * a.tail_s, high + p_max * b.tail_s
                )
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
            if (
                d is None
                or not d.counter.updates
                or d.counter.updates[-1][0] <= t_s
                or d.counter.updates[0][0] > t_s
            ):
                return None
            updates = d.counter.updates
            i = max(bisect.bisect_right(updates, t_s, key=lambda u: u[0]) - 1, 0)
            (u_a, e_a, p_a), (u_b, e_b, p_b) = updates[i], updates[i + 1]
            return self._band.calibrated_j(d.info, e_a + _split(u_a, u_b, e_b - e_a, p_a, p_b, t_s))

    def finish(self, t_s: float) -> None:
        """Extend every live device's energy to `t_s` from its latest power (the final edge, at close)."""
        with self._current():
            for d in self._devices.values():
                if not d.samples or d.health.lost_at is not None or d.power.last_power_w is None:
                    continue
                if d.counter.last_counter_t is not None and d.uses_counter and t_s > d.counter.last_counter_t:
                    d.counter.counter_j += d.power.last_power_w * (t_s - d.counter.last_counter_t)
                    d.measured_s += t_s - d.counter.last_counter_t
                    d.counter.last_counter_t = t_s
                if d.power.last_power_t is not None and t_s > d.power.last_power_t:
                    d.power.trapezoid_j += d.power.last_power_w * (t_s - d.power.last_power_t)
                    if not d.uses_counter:
                        d.measured_s += t_s - d.power.last_power_t
                    d.power.last_power_t = t_s

    # -- internals (called with the lock held, except _refresh_locks) --------

    def _profile(self, d: DeviceState) -> SensorProfile:
        """The sensor profile whose publication period and observed fraction `d`'s analysis assumes."""
        return self._band.profile(d.info) or self._band.gpu_profile

    def _mark(self, d: DeviceState, t_s: float) -> EdgeMark:
        last_t = d.counter.last_counter_t if d.uses_counter else d.power.last_power_t
        tail_s = max(t_s - last_t, 0.0) if last_t is not None else 0.0
        tail_j = self._band.calibrated_j(d.info, (d.power.last_power_w or 0.0) * tail_s)
        return EdgeMark(t_s, self._totals(d, t_s), tail_j, tail_s)

    def _totals(self, d: DeviceState, now: float) -> Totals:
        open_gap_s = (
            now - d.health.lost_at if d.health.lost_at is not None and now > d.health.lost_at else 0.0
        )
        sampled_j = max(d.power.trapezoid_j - d.power.start_sampled_j, 0.0)
        raw_j = max(d.counter.counter_j - d.counter.start_counter_j, 0.0) if d.uses_counter else sampled_j
        return Totals(
            energy_j=self._band.calibrated_j(d.info, raw_j),
            sampled_j=self._band.calibrated_j(d.info, sampled_j),
            measured_s=d.measured_s,
            gap_s=d.health.closed_gap_s + open_gap_s,
            publications=d.pubs.pub_n,
            doubt_j=self._band.calibrated_j(d.info, d.counter.stale_doubt_j + d.scale_doubt_rel * raw_j),
        )

    def _inputs(self, d: DeviceState, cur: Totals, prev: Totals) -> BandInputs:
        """What the band of the span between two totals of `d` depends on."""
        return BandInputs(
            energy_j=cur.energy_j - prev.energy_j,
            sampled_j=cur.sampled_j - prev.sampled_j if d.power.last_power_w is not None else None,
            from_counter=d.uses_counter,
            measured_s=cur.measured_s - prev.measured_s,
            gap_s=cur.gap_s - prev.gap_s,
            p_max_w=d.p_max_w(),
            cv=d.cv(),
            publications=d.band_publications(cur, prev, self._profile(d).publication_period_s),
            phase_lock=d.check.lock is not None,
            alias_rel=d.check.repetition.alias_rel if d.check.repetition is not None else None,
            counter_true=d.check.counter_true,
            from_first=prev == Totals(),
            doubt_j=cur.doubt_j - prev.doubt_j,
        )

    def _energy(self, d: DeviceState, now: float) -> DeviceEnergy:
        tot = self._totals(d, now)
        band = self._band.band_parts(d.info, self._inputs(d, tot, Totals()))
        figure = EnergyFigure(
            d.info.kind,
            d.info.source,
            tot.energy_j,
            band.low_j,
            band.high_j,
            band.random_low_j,
            band.random_high_j,
        ).to_millijoules()  # the rows' sum: each row is the running total's difference to the mJ
        return DeviceEnergy(
            device=d.info,
            figure=figure,
            # a lost device has no latest power: its last reading, exported flat, counted a dead GPU
            power_w=d.power.last_power_w if d.health.lost_at is None else None,
            samples=d.samples,
            gap_count=d.health.gap_count,
            gap_s=tot.gap_s,
            lost=d.health.lost_at is not None,
            notes=self._notes(d),
            utilisation_pct_sum=d.utilisation_pct_sum,
            utilisation_reads=d.utilisation_reads,
            counter_check=d.startup,
            counter_swapped=bool(d.swapped),
        )

    def _refresh_locks(self) -> None:
        """Re-run repetition and lock analysis where enough new publications arrived (outside the lock).

        Run at every snapshot and flush, as often as the live agent asks (telemetry.lockcheck).
        """
        with self._current():
            todo = [(d, LockCheck.of(d)) for d in self._devices.values() if due(d, self._band)]
        for d, check in todo:
            finding = check.analyse(self._band, self._profile(d))
            with self._lock:
                finding.apply(d)
                judge_scale(d, self._band.profile(d.info))

    def _notes(self, d: DeviceState) -> tuple[str, ...]:
        return notes(d, self._profile(d))


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
