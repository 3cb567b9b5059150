"""What the integrator keeps per device: running sums, grouped by what they measure.

A device's state is a handful of small records (its counter, its power
readings, the span where both exist, the publications seen, its health and
the lock analysis), so each integration step touches one of them; the
integrator (telemetry.integrator) owns them and holds its lock around them.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, replace

from wattlog.records import Source
from wattlog.telemetry.publications import PublicationPeriod
from wattlog.telemetry.sensors.base import counter_trusted
from wattlog.telemetry.types import DeviceInfo
from wattlog.telemetry.uncertainty import PhaseLock, Repetition

PUBLICATIONS_KEPT = 256  # recent distinct published values per device, for lock detection (>= 25 s)
_INTERVALS_KEPT = 64  # recent times between the driver's publications, for its publication period
_UPDATES_KEPT = 256  # recent counter updates (time, running joules, power then), to resolve window edges
_CHECK_UPDATES = 3  # counter values seen before its start-up check is taken
_GAP_PUBLICATIONS = 2.5  # driver-timed power: a stretch this many publication periods long is a gap


@dataclass(frozen=True, slots=True)
class Totals:
    """Running sums whose differences give an interval."""

    energy_j: float = 0.0
    sampled_j: float = 0.0
    measured_s: float = 0.0
    gap_s: float = 0.0
    publications: int = 0
    doubt_j: float = 0.0  # what the counter's stale catch-ups differ from power x time (telemetry.stale)


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
    totals: Totals
    tail_j: float
    tail_s: float


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed read, queued in order with the readings (see Integrator.add)."""

    device_uuid: str
    t_s: float
    reason: str
    lost: bool


@dataclass(slots=True)
class CounterState:
    """The hardware energy counter: its last value, the sum of its differences, resets and wraps."""

    last_counter_mj: float | None = None
    last_counter_t: float | None = None
    counter_j: float = 0.0
    start_counter_j: float = 0.0  # the sliver before the first value that is not ours
    resets: int = 0  # went backwards
    jumps: int = 0  # jumped forward more than the device could draw
    wraps: int = 0
    bridged_s: float = 0.0  # stretches without reads that the counter's difference spans
    # a counter told stale by its values (telemetry.stale): the last read that found it unchanged,
    # power x time and its time at its last change, the times between its changes, the stretches
    unchanged_until: float | None = None
    held_at_change: tuple[float, float | None] = (0.0, None)
    changes: PublicationPeriod = field(default_factory=lambda: PublicationPeriod(_INTERVALS_KEPT, 5))
    stale: int = 0
    stale_s: float = 0.0
    stale_j: float = 0.0
    stale_expected_j: float = 0.0
    stale_doubt_j: float = 0.0
    # a counter without the driver's times: the read times between its changes (its update period)
    period: PublicationPeriod = field(default_factory=lambda: PublicationPeriod(_INTERVALS_KEPT, 5))
    updates: deque[tuple[float, float, float]] = field(default_factory=lambda: deque(maxlen=_UPDATES_KEPT))


@dataclass(slots=True)
class PowerState:
    """The power readings: the last publication, their trapezoid, the driver's publication period."""

    last_power_w: float | None = None
    last_power_t: float | None = None
    trapezoid_j: float = 0.0
    start_sampled_j: float = 0.0
    p_max_seen_w: float = 0.0
    held_j: float = 0.0  # power x time over every step, gaps included (a stale counter's check)
    period: PublicationPeriod = field(default_factory=lambda: PublicationPeriod(_INTERVALS_KEPT, 5))
    repeats: int = 0  # reads that repeated a publication


@dataclass(slots=True)
class Agreement:
    """Counter and sampled energy over the span where both were clean, to compare them."""

    both_counter_j: float = 0.0
    both_trapezoid_j: float = 0.0
    both_counter_s: float = 0.0
    both_sampled_s: float = 0.0
    # the widest offset seen between the counter's updates and the publications (driver times)
    grid_offset_s: float | None = None  # None: not seen (no driver times): any offset is possible
    # the sums above when the last span of at least MIN_SPAN_S was compared
    mark: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    spans: int = 0  # spans compared
    spans_sq: float = 0.0  # sum of their squared relative disagreements


@dataclass(slots=True)
class Publications:
    """Statistics of the distinct published power values: count, mean, variance, successive differences."""

    pub_n: int = 0
    pub_mean: float = 0.0
    pub_m2: float = 0.0
    pub_d2: float = 0.0  # sum of squared differences of successive publications
    recent: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=PUBLICATIONS_KEPT))

    def add(self, power_t: float, power_w: float) -> None:
        """Count one new publication."""
        if self.recent:
            self.pub_d2 += (power_w - self.recent[-1][1]) ** 2
        self.recent.append((power_t, power_w))
        self.pub_n += 1
        delta = power_w - self.pub_mean
        self.pub_mean += delta / self.pub_n
        self.pub_m2 += delta * (power_w - self.pub_mean)

    def cv(self) -> float:
        """Variation of the power from one publication to the next, relative to the mean.

        The von Neumann estimate, sqrt(mean squared successive difference / 2): what a
        window of 25 ms in 100 ms can miss is the power's variation within ~100 ms,
        not the slow swings (checkpoint stalls) that publications every 100 ms follow.
        """
        if self.pub_n < 2 or self.pub_mean <= 0:
            return 0.0
        return math.sqrt(self.pub_d2 / (2 * (self.pub_n - 1))) / self.pub_mean


@dataclass(slots=True)
class Health:
    """Failed reads, loss and the gaps recorded for them."""

    failure_reason: str | None = None
    first_failure_t: float | None = None
    lost_at: float | None = None
    lost_reason: str = ""
    gap_count: int = 0
    closed_gap_s: float = 0.0


@dataclass(slots=True)
class LockState:
    """What the repetition and phase-lock analysis found so far, and when it last looked."""

    checked_at_pub: int = 0
    checked_at_both_s: float = 0.0
    lock: PhaseLock | None = None
    repetition: Repetition | None = None
    counter_true: bool = False  # the counter saw what the samples did not: it integrates true power


@dataclass(slots=True)
class DeviceState:
    """Everything the integrator keeps for one device."""

    info: DeviceInfo
    last_t: float | None = None
    samples: int = 0
    measured_s: float = 0.0
    limit_w: float | None = None
    taken: Totals = field(default_factory=Totals)
    counter: CounterState = field(default_factory=CounterState)
    power: PowerState = field(default_factory=PowerState)
    both: Agreement = field(default_factory=Agreement)
    pubs: Publications = field(default_factory=Publications)
    health: Health = field(default_factory=Health)
    check: LockState = field(default_factory=LockState)
    utilisation_pct_sum: float = 0.0  # the utilisation readings (a slow metric, ~1 Hz) summed, percent
    utilisation_reads: int = 0
    startup: tuple[float, float, float] | None = None  # counter J, power x time J, s: first interval
    swapped: str = ""  # why its counter was swapped for power x time at start-up (empty: it was not)
    scale: tuple[float, float, float] | None = None  # sampled vs counter, its spread, span s (scalecheck)
    scale_doubt_rel: float = 0.0  # the counter's scale off power x time by this much: in the band

    def check_due(self) -> bool:
        """Whether the counter has changed enough (two differences) for its start-up check: one read
        before its first update would compare 0 J with power x time and swap a sound counter."""
        return len(self.counter.updates) >= _CHECK_UPDATES

    def swap_untrusted_counter(self) -> bool:
        """Swap the counter for the power readings if the start-up check failed (COUNTER_CHECK).

        A counter far off power x time (a wrong unit, another domain's counter) is not trusted: from
        here on the device integrates its power readings, under the sampled label and band.
        """
        if self.startup is None or counter_trusted(self.startup[0], self.startup[1]):
            return False
        counter_j, power_j, _ = self.startup
        self.info = replace(self.info, source=Source.SAMPLED, has_counter=False)
        self.swapped = (
            f"counter read {counter_j:.4g} J against power x time {power_j:.4g} J at start-up: "
            "not trusted, power integrated"
        )
        return True

    @property
    def uses_counter(self) -> bool:
        """Whether energy comes from the hardware counter (it has one and it answered)."""
        return self.info.has_counter and self.counter.last_counter_mj is not None

    def p_max_w(self) -> float:
        """Bound on power while unobserved: the limit read, the declared limit, else the highest seen."""
        return self.limit_w or self.info.power_limit_w or self.power.p_max_seen_w

    def publication_period_s(self) -> float | None:
        """Median time between the driver's publications (as Zeus infers it), once 5 are seen."""
        return self.power.period.period_s

    def max_read_spacing_s(self, max_gap_s: float) -> float:
        """Longest stretch between reads that is not a gap: `max_gap_s`, or 2.5 publications of a
        driver-timed device, or 2.5 observed updates of an untimed counter (a sampler may read it
        once per publication or update, not every tick)."""
        median_s = self.power.period.median_s or self.counter.period.period_s  # 5 updates seen
        return max_gap_s if median_s is None else max(max_gap_s, _GAP_PUBLICATIONS * median_s)

    def band_publications(self, cur: Totals, prev: Totals, period_s: float) -> int:
        """Publications the band of the span (prev, cur] counts: the distinct ones read, or for a counter
        at least its measured seconds over the sensor's publication period: a counter that sums the
        observed windows sums every publication, however rarely power is read (AMD's: once a second)."""
        seen = cur.publications - prev.publications
        if not self.uses_counter or period_s <= 0:
            return seen
        return max(seen, int((cur.measured_s - prev.measured_s) / period_s))

    def cv(self) -> float:
        """Variation of the power from one publication to the next (Publications.cv)."""
        return self.pubs.cv()

    def compare(self) -> tuple[float, float] | None:
        """(sampled vs counter mean power, relative; the shorter of their spans in s), where both exist."""
        both = self.both
        if not (
            self.uses_counter
            and both.both_counter_j > 0
            and both.both_counter_s > 0
            and both.both_sampled_s > 0
        ):
            return None
        counter_w = both.both_counter_j / both.both_counter_s
        sampled_w = both.both_trapezoid_j / both.both_sampled_s
        return sampled_w / counter_w - 1, min(both.both_counter_s, both.both_sampled_s)

    def compare_span(self, min_span_s: float) -> None:
        """Compare counter and samples over the span since the last mark, once it is `min_span_s` long.

        An observed-window counter equals the samples over every span (to the edges, where the
        two grids are offset); a true-power counter parts from them by the sampling error of
        each span, so the spread of these disagreements is evidence of which it is.
        """
        b = self.both
        c0, t0, cs0, ts0 = b.mark
        dc, dt, dcs, dts = (
            b.both_counter_j - c0,
            b.both_trapezoid_j - t0,
            b.both_counter_s - cs0,
            b.both_sampled_s - ts0,
        )
        if min(dcs, dts) < min_span_s or dc <= 0 or not self.uses_counter:
            return
        b.mark = (b.both_counter_j, b.both_trapezoid_j, b.both_counter_s, b.both_sampled_s)
        rel = (dt / dts) / (dc / dcs) - 1
        b.spans += 1
        b.spans_sq += rel * rel

    def span_evidence(self, min_span_s: float) -> tuple[int, float, float]:
        """(spans compared, RMS of their disagreements, what grid offsets alone could cause per span)."""
        b = self.both
        if not b.spans or b.both_counter_s <= 0 or b.both_counter_j <= 0 or b.grid_offset_s is None:
            return 0, 0.0, math.inf
        mean_w = b.both_counter_j / b.both_counter_s
        # each edge of a span may misplace up to P_max x the offset between the two grids
        edge_rel = 2 * self.power.p_max_seen_w * b.grid_offset_s / (mean_w * min_span_s)
        return b.spans, math.sqrt(b.spans_sq / b.spans), edge_rel

    def both_s(self) -> float:
        """Seconds over which counter and samples have been compared."""
        compared = self.compare()
        return compared[1] if compared is not None else 0.0
