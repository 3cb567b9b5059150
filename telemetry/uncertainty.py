"""The honest band around an energy figure, and phase-lock detection from the agent's own samples.

True energy is bracketed by three independent effects, composed in this order:

1. Calibration. NVIDIA boards read power with a gain error: Yang, Adamek and
   Armour (SC24, "Accurate and Convenient Energy Measurements for GPUs: A
   Detailed Study of NVIDIA GPU's Built-In Power Sensor") measured -9.5 % to
   +6.4 % across boards. A reading E is gain x truth, so truth lies in
   [E / 1.064, E / 0.905]. A GPU calibrated against a meter gets its factor
   applied and a narrow band instead. CPU/DRAM (RAPL) get +-5 %, an assumption.
2. Partial observation. On A100/H100 each value published every 100 ms averages
   only the last 25 ms, so a quarter of the run is seen. For loads not locked
   to the sensor the error averages out like a sampling error: z x cv / sqrt(n)
   with n the publications seen divided by ten (neighbouring windows err
   together; the step lengths of training correlate them over ~1 s), plus a
   0.5 % floor. A counter is given the same term unless it is known to integrate
   true power (whether it does is not publicly known).
3. Gaps: each unmeasured second adds [0, P_max] with P_max the power limit (or
   the highest power seen).

A load whose period locks to the publication period is seen at the same phase
every time and misread by tens of percent. When that is suspected, the band also
covers the only thing the readings still prove: the observed quarter is true
power, the unobserved rest lies in [0, P_max]. Estimated sources (no sensor) get
+-50 %: a utilisation x TDP model is routinely off by tens of percent.

Phase lock is suspected from the agent's own readings in two ways:

- The published values repeat exactly (detect_periodic_lock). A load whose
  period is not locked is seen at a drifting phase, so the values published at
  its edges differ every time; training steps also jitter. A locked load shows
  the same few values forever. Runs of identical 25 ms samples are collapsed
  first (one value per publication), so the test does not depend on how the
  sampler's grid meets the sensor's.
- Counter and sampled energy disagree over the same spans by more than the
  sampling error (counter_disagreement). A load locked at exactly the
  publication period publishes a constant, which looks like a steady load; if
  the counter integrates true power it still sees the truth, and the two part.
  If the counter only integrates the observed windows too, nothing the sensor
  offers can reveal that lock (bench.accuracy prints it as a control).

The flag is sticky (a lock found once widens the device's whole band) and the
counter comparison is cumulative, so a lock that starts late in a long steady
run is caught by the first test, or only late by the second.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wattlog.errors import ConfigError
from wattlog.records import Kind, Source
from wattlog.telemetry.types import DeviceInfo


@dataclass(frozen=True, slots=True)
class Calibration:
    """A device calibrated against a meter: true = reading x factor, within +-uncertainty_rel."""

    factor: float
    uncertainty_rel: float = 0.01


@dataclass(frozen=True, slots=True)
class BandInputs:
    """What the band of one device (or one interval of it) depends on.

    Attributes:
        energy_j: The reported energy (counter or trapezoid, calibration applied), joules.
        sampled_j: Trapezoid over the published power values in the same span (None if none), joules.
        from_counter: Whether energy_j comes from a hardware counter.
        measured_s: Seconds covered by readings.
        gap_s: Seconds not measured.
        p_max_w: Bound on power while unobserved: power limit, else highest power seen.
        cv: Coefficient of variation of the published power values (0 if unknown).
        publications: Distinct published values seen.
        phase_lock: Whether a phase lock is suspected.
        alias_rel: Bound on aliasing when the published values repeat (None: they do not).
        counter_true: The counter disagreed with the samples beyond sampling error, so it
            integrates more than the observed windows: its figure gets no partial-observation term.
    """

    energy_j: float
    sampled_j: float | None
    from_counter: bool
    measured_s: float
    gap_s: float
    p_max_w: float
    cv: float = 0.0
    publications: int = 0
    phase_lock: bool = False
    alias_rel: float | None = None
    counter_true: bool = False


@dataclass
class BandModel:
    """How wide the band around each device's energy is; see the module docstring for why.

    Raises:
        ConfigError: On construction, if a range is inverted or a fraction is out of (0, 1].
    """

    gain_low: float = -0.095
    """Lowest board gain error (SC24, Yang, Adamek, Armour: -9.5 %)."""
    gain_high: float = 0.064
    """Highest board gain error (SC24: +6.4 %)."""
    other_gain_rel: float = 0.05
    """Gain error assumed for non-GPU sensors (RAPL), +-."""
    observed_fraction: float = 0.25
    """Share of each publication period a GPU reading averages (25 ms of 100 ms on A100/H100)."""
    publication_period_s: float = 0.1
    """How often a GPU publishes a new power value."""
    counter_integrates_true: bool | None = None
    """Whether GPU counters integrate true power (None: unknown, so they get the sampling term)."""
    z: float = 3.0
    """Standard errors of the partial-observation term."""
    floor_rel: float = 0.005
    """Partial-observation term never below this."""
    correlated_publications: int = 10
    """Publications that err together (n is divided by this)."""
    lock_rel: float = 0.05
    """A repetition whose aliasing bound exceeds this is flagged as a phase lock."""
    estimated_rel: float = 0.5
    """Band of estimated sources, +-."""
    calibrations: Mapping[str, Calibration] = field(default_factory=dict)
    """Per-device calibration against a meter, by UUID."""

    def __post_init__(self) -> None:
        if not self.gain_low < 0 < self.gain_high or self.gain_low <= -1:
            raise ConfigError(f"need -1 < gain_low < 0 < gain_high, got {self.gain_low}, {self.gain_high}")
        if not 0 < self.observed_fraction <= 1:
            raise ConfigError(f"observed_fraction must be in (0, 1], got {self.observed_fraction}")
        if self.publication_period_s <= 0 or self.z < 0 or self.floor_rel < 0:
            raise ConfigError("publication_period_s must be > 0, z and floor_rel >= 0")

    def calibrated_j(self, device: DeviceInfo, raw_j: float) -> float:
        """`raw_j` with the device's calibration factor applied (unchanged if uncalibrated)."""
        cal = self.calibrations.get(device.uuid)
        return raw_j * cal.factor if cal is not None else raw_j

    def fraction_seen(self, device: DeviceInfo) -> float:
        """Share of the time the device's power readings observe (1 for non-GPU sensors)."""
        return self.observed_fraction if device.kind is Kind.GPU else 1.0

    def band(self, device: DeviceInfo, x: BandInputs) -> tuple[float, float]:
        """(low_j, high_j) that true energy lies in, for `device` and the span `x` describes."""
        gap_j = x.gap_s * x.p_max_w
        if device.source is Source.ESTIMATED:
            return x.energy_j * (1 - self.estimated_rel), x.energy_j * (1 + self.estimated_rel) + gap_j
        lo_f, hi_f = self._calibration(device)
        f = self.fraction_seen(device)
        trusted = x.from_counter and (self.counter_integrates_true or x.counter_true)
        po = 0.0
        if f < 1 and trusted:
            po = 0.0 if self.counter_integrates_true else self.floor_rel
        elif f < 1 and x.alias_rel is not None:  # a repetition: a systematic error, bounded from the samples
            po = max(self.floor_rel, x.alias_rel)
        elif f < 1:
            po = self.sampling_rel(x.cv, x.publications)
        low = x.energy_j * lo_f * (1 - po)
        high = x.energy_j * hi_f * (1 + po)
        if x.phase_lock and f < 1 and not trusted and x.alias_rel is None:
            seen_j = x.sampled_j if x.sampled_j is not None else x.energy_j
            low = min(low, f * seen_j * lo_f)
            high = max(high, f * seen_j * hi_f + (1 - f) * x.p_max_w * x.measured_s)
        return low, high + gap_j

    def sampling_rel(self, cv: float, publications: int) -> float:
        """Relative error partial observation may cause, for values of variation `cv` over `publications`."""
        n_eff = max(publications / self.correlated_publications, 1.0)
        return min(self.floor_rel + self.z * cv / math.sqrt(n_eff), 1.0)

    def _calibration(self, device: DeviceInfo) -> tuple[float, float]:
        """Factors taking a reading to the lowest and highest truth it allows."""
        cal = self.calibrations.get(device.uuid)
        if cal is not None:
            return 1 - cal.uncertainty_rel, 1 + cal.uncertainty_rel
        if device.kind is Kind.GPU:
            return 1 / (1 + self.gain_high), 1 / (1 + self.gain_low)
        return 1 / (1 + self.other_gain_rel), 1 / (1 - self.other_gain_rel)


@dataclass(frozen=True, slots=True)
class PhaseLock:
    """A suspected lock between the load and the sensor's publication grid."""

    load_period_s: float
    score: float
    how: str

    def note(self, publication_period_s: float = 0.1) -> str:
        """The plain-language caveat a DeviceEnergy carries."""
        return (
            f"phase lock suspected ({self.how}): load period ~{self.load_period_s * 1e3:.0f} ms locked to "
            f"the sensor's {publication_period_s * 1e3:.0f} ms publication period; NVML readings may be "
            "off by tens of percent"
        )


def detect_periodic_lock(
    times_s: Sequence[float],
    values_w: Sequence[float],
    *,
    max_lag: int = 30,
    min_score: float = 0.97,
    min_cv: float = 0.03,
) -> PhaseLock | None:
    """A lock seen in the published values alone: an exactly repeating pattern.

    `values_w` are distinct consecutive published values (runs of identical 25 ms
    samples collapsed to one), at `times_s`. A load not locked to the sensor is
    seen at a drifting phase, so the values it publishes never repeat exactly;
    a locked one repeats the same few values forever. The score at lag m is
    1 - mean((x_i - x_{i-m})^2) / (2 var x), ~1 for an exact repeat, near the
    autocorrelation otherwise; the smallest lag scoring >= `min_score` wins.
    A series with almost no variation (cv < `min_cv`) proves nothing: a steady
    load and a load locked at one value (period = the publication period) look
    the same here, which is why the counter comparison exists.

    Args:
        times_s: Time of each value.
        values_w: Collapsed published values.
        max_lag: Longest pattern tried, in values.
        min_score: Score that counts as an exact repeat.
        min_cv: Smallest variation worth testing.

    Returns:
        The suspected lock, or None.
    """
    n = len(values_w)
    if n < 60:
        return None
    mean = sum(values_w) / n
    var = sum((v - mean) ** 2 for v in values_w) / n
    if mean <= 0 or math.sqrt(var) / mean < min_cv:
        return None
    for m in range(1, min(max_lag, n // 4) + 1):
        d2 = sum((values_w[i] - values_w[i - m]) ** 2 for i in range(m, n)) / (n - m)
        score = 1 - d2 / (2 * var)
        if score >= min_score:
            period_s = (times_s[-1] - times_s[-1 - m * ((n - 1) // m)]) / ((n - 1) // m)
            return PhaseLock(period_s, score, "published power repeats exactly")
    return None


@dataclass(frozen=True, slots=True)
class Repetition:
    """Published values that repeat exactly: the load's period is commensurate with the sensor's.

    Repetition alone is harmless when the phases it shows cover the load's step
    (a 230 ms step seen at 23 phases 10 ms apart), and harmful when few phases of
    a load whose power differs there are seen (a 200 ms step seen at 2). The
    difference is bounded from the samples, not guessed (see :func:`analyse_repetition`).

    Attributes:
        lag: Publications after which the pattern repeats (m).
        load_period_s: The load's period as the phase ordering reveals it (m x P / k).
        phases: Distinct phases of the load the sensor sees (m).
        steps_per_pattern: Load periods inside one pattern (k).
        alias_rel: Bound on the relative error of the readings' mean, from the samples.
        score: How exactly the pattern repeats (1 = exactly).
    """

    lag: int
    load_period_s: float
    phases: int
    steps_per_pattern: int
    alias_rel: float
    score: float

    def note(self) -> str:
        """The plain-language caveat a DeviceEnergy carries for a repetition that is not a lock."""
        return (
            f"published power repeats every {self.lag} publications (load period ~"
            f"{self.load_period_s * 1e3:.0f} ms seen at {self.phases} phases): aliasing bounded by "
            f"+-{self.alias_rel:.1%} from the samples"
        )


def analyse_repetition(
    times_s: Sequence[float],
    values_w: Sequence[float],
    *,
    publication_period_s: float = 0.1,
    observed_fraction: float = 0.25,
    max_lag: int = 40,
    min_score: float = 0.97,
    min_cv: float = 0.03,
) -> Repetition | None:
    """How far an exactly repeating series of published values may mislead, from the values alone.

    `values_w` are consecutive publications (one per publication period P). If they
    repeat after m values (the smallest lag scoring >= `min_score`, as in
    :func:`detect_periodic_lock`), the pattern spans m x P = k load periods and the
    m values are the load seen at m phases spaced evenly over its period. k is
    found by ordering the pattern's mean values by phase for each candidate k
    coprime with m: the true order is the smoothest (least circular variation V),
    and ties go to the smallest k (the widest bound). The readings' mean then
    errs by at most (V / 2) x max(1 - k x f, 0) / m, with f = w / P the observed
    fraction: the Koksma bound for an even grid of m windows of width w on a load
    of variation V (each level change misplaced by at most one grid gap less the
    window). V is what the samples show: a spike no window ever sees is not in it.
    Relative to the mean of the values, that is `alias_rel`.

    Returns:
        The repetition, or None when the values do not repeat (or barely vary).
    """
    n = len(values_w)
    if n < 60:
        return None
    mean = sum(values_w) / n
    var = sum((v - mean) ** 2 for v in values_w) / n
    if mean <= 0 or math.sqrt(var) / mean < min_cv:
        return None
    for m in range(1, min(max_lag, n // 4) + 1):
        d2 = sum((values_w[i] - values_w[i - m]) ** 2 for i in range(m, n)) / (n - m)
        score = 1 - d2 / (2 * var)
        if score < min_score:
            continue
        pattern = [statistics.fmean(values_w[j::m]) for j in range(m)]
        k, variation = _smoothest_order(pattern)
        alias_w = variation / 2 * max(1.0 - k * observed_fraction, 0.0) / m
        period_s = m * publication_period_s / k
        return Repetition(m, period_s, m, k, alias_w / statistics.fmean(pattern), score)
    return None


def _smoothest_order(pattern: Sequence[float]) -> tuple[int, float]:
    """(k, V): the steps per pattern whose phase order is smoothest, and that order's circular variation."""
    m = len(pattern)
    best: tuple[float, int] | None = None
    for k in range(1, m + 1):
        if math.gcd(k, m) != 1:
            continue
        # publication j sits at phase (j x k mod m) / m of the load period
        ordered = [0.0] * m
        for j, value in enumerate(pattern):
            ordered[(j * k) % m] = value
        variation = sum(abs(ordered[i] - ordered[i - 1]) for i in range(m))
        if best is None or variation < best[0] * (1 - 1e-6) - 1e-9:
            best = (variation, k)
    assert best is not None
    return best[1], best[0]


def counter_disagreement(counter_j: float, sampled_j: float, expected_rel: float) -> float | None:
    """Relative disagreement of counter and sampled energy over the same span, if beyond `expected_rel`.

    A counter that integrates true power and readings that see a locked load at
    one phase disagree systematically, by far more than sampling error.
    """
    if counter_j <= 0:
        return None
    rel = (sampled_j - counter_j) / counter_j
    return rel if abs(rel) > expected_rel else None
