"""The honest band around an energy figure, and phase-lock detection from the agent's own samples.

True energy is bracketed by three independent effects, composed in this order:

The numbers that depend on the sensor (gain range, observed fraction,
publication period, whether the counter integrates true power) come from the
device's sensor profile (DeviceInfo.profile, loaded by its backend from its
data file with sources); a GPU that carries none gets BandModel's own fields,
NVIDIA's numbers (telemetry/sensors/nvidia.toml) unless set otherwise.

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

Of these, only the sampling term (z x cv / sqrt(n), less its floor) is an error
independent between spans of a run; `band_parts` says how much of each side it
is, so the ledger adds it in quadrature when it sums a run's rows, and the rest
linearly (wattlog.records.summed_band).

2b. When the published values repeat exactly (the load's period is commensurate
   with the sensor's), partial observation is no longer a random error that
   averages out but a fixed one, bounded from the samples (analyse_repetition):
   the phases seen, their spread, the observed window. Repetition that covers
   the step with many phases (230 ms steps seen at 23 phases, 1.3 s at 13) is
   harmless: its small bound replaces the sampling term, nothing is flagged.
   Few phases of a load whose power differs there (200 ms steps seen at 2) is a
   harmful lock: flagged when the bound exceeds `lock_rel` (5 %), and the band
   carries the bound.

Estimated sources (no sensor) get +-50 %: a utilisation x TDP model is
routinely off by tens of percent.

Phase lock is suspected from the agent's own readings in two ways:

- The published values repeat exactly at few phases (analyse_repetition). A load
  whose period is not commensurate is seen at a drifting phase, so the values
  published at its edges differ every time; training steps also jitter. With the
  driver's timestamps every publication is taken once (without them, runs of
  identical 25 ms samples are collapsed to one value).
- Counter and sampled energy disagree by more than the sampling error and any
  repetition's bound (counter_disagreement). A load locked at exactly the
  publication period publishes a constant, which looks like a steady load; if
  the counter integrates true power it still sees the truth, and the two part.
  A counter that sums only the observed windows equals the samples, so one that
  differs by more than `counter_evidence_rel` over a minute integrates true
  power: its figure is then trusted (no partial-observation term). If the
  counter only integrates the observed windows too, nothing the sensor offers
  can reveal a lock at one phase (bench.accuracy prints it as a control).

A lock flagged without a bound (only from the counter, with an untrusted
figure) keeps the old floor: the observed quarter is true power, the unobserved
rest lies in [0, P_max]. The flag is sticky, and so is the widest repetition
bound seen; detection runs at every snapshot and flush (as the live agent asks),
once 100 new publications or 10 s of counter comparison have come in.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wattlog.errors import ConfigError
from wattlog.records import Kind, Source
from wattlog.telemetry.phaselock import PhaseLock as PhaseLock  # re-exported: callers import it here
from wattlog.telemetry.sensors.profiles import check_profile, load_table
from wattlog.telemetry.types import DeviceInfo, SensorProfile


def _gpu_default() -> SensorProfile:
    """The profile of a GPU that carries none: NVIDIA's default family, as wattlog always assumed."""
    return load_table("nvidia.toml").default


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
        from_first: The span starts at the device's first reading, so the counter's step (quantisation
            of the first and last readings) enters its band; later spans' steps telescope into it.
        doubt_j: Joules the counter's figure may be off beyond the above, either way: its stale
            catch-ups' differences from power x time (telemetry.stale). A systematic width.
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
    from_first: bool = False
    doubt_j: float = 0.0


@dataclass(frozen=True, slots=True)
class Band:
    """The joules that true energy lies in, and the parts of each side that are sampling error.

    The sampling error of partial observation (z x cv / sqrt(n)) is independent between
    spans of the run, so spans summed later (the ledger's intervals) add it in quadrature;
    the rest of each side (calibration, the floor, a repetition's bound, gaps) is systematic
    and adds up linearly. 0: no sampling error in that side.
    """

    low_j: float
    high_j: float
    random_low_j: float = 0.0
    random_high_j: float = 0.0


@dataclass
class BandModel:
    """How wide the band around each device's energy is; see the module docstring for why.

    Raises:
        ConfigError: On construction, if a range is inverted or a fraction is out of (0, 1].
    """

    gain_low: float = field(default_factory=lambda: _gpu_default().gain_low)
    """Lowest board gain error of a GPU without a profile (nvidia.toml: SC24, -9.5 %)."""
    gain_high: float = field(default_factory=lambda: _gpu_default().gain_high)
    """Highest board gain error of a GPU without a profile (nvidia.toml: SC24, +6.4 %)."""
    other_gain_rel: float = 0.05
    """Gain error assumed for non-GPU sensors (RAPL), +-."""
    observed_fraction: float = field(default_factory=lambda: _gpu_default().observed_fraction)
    """Share of each publication period a reading of a GPU without a profile averages (25 ms of 100 ms)."""
    publication_period_s: float = field(default_factory=lambda: _gpu_default().publication_period_s)
    """How often a GPU without a profile publishes a new power value."""
    counter_integrates_true: bool | None = field(
        default_factory=lambda: _gpu_default().counter_integrates_true
    )
    """Whether the counters of GPUs without a profile integrate true power (None: unknown, so they
    get the sampling term)."""
    z: float = 3.0
    """Standard errors of the partial-observation term."""
    floor_rel: float = 0.005
    """Partial-observation term never below this."""
    correlated_publications: int = 10
    """Publications that err together (n is divided by this)."""
    counter_evidence_rel: float = 0.01
    """Counter and samples differing by more than this over 60 s or more: the counter integrates
    true power (one summing the observed windows equals the samples), so its figure is trusted."""
    trusted_floor_rel: float = 0.0015
    """What remains of a counter shown (not declared) to integrate true power, beside calibration:
    its edges, the first sliver and the stretch after its last update taken from the latest power
    (bench.accuracy: 0.07 % worst on 90 s runs; twice that)."""
    counter_span_rel: float = 0.001
    """Counter and samples parting by more than this RMS over six or more spans of 10 s (and by
    more than three times what the offset between their grids could cause): the counter integrates
    true power. One summing the observed windows equals the samples over every span, to rounding
    (mJ and mW over 10 s: ~1e-6) and the edges."""
    lock_rel: float = 0.05
    """A repetition whose aliasing bound exceeds this is flagged as a phase lock."""
    estimated_rel: float = 0.5
    """Band of estimated sources, +-."""
    calibrations: Mapping[str, Calibration] = field(default_factory=dict)
    """Per-device calibration against a meter, by UUID."""
    _gpu: SensorProfile = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.z < 0 or self.floor_rel < 0:
            raise ConfigError(f"z and floor_rel must be >= 0, got {self.z}, {self.floor_rel}")
        self._gpu = check_profile(
            dataclasses.replace(
                _gpu_default(),
                family="band-default",
                gain_low=self.gain_low,
                gain_high=self.gain_high,
                observed_fraction=self.observed_fraction,
                publication_period_s=self.publication_period_s,
                counter_integrates_true=self.counter_integrates_true,
            )
        )

    @property
    def gpu_profile(self) -> SensorProfile:
        """The profile a GPU without one gets: this model's gain, fraction, period and counter fields."""
        return self._gpu

    def profile(self, device: DeviceInfo) -> SensorProfile | None:
        """The sensor profile `device`'s band reads: its own, else this model's for a GPU, else None."""
        if device.profile is not None:
            return device.profile
        return self._gpu if device.kind is Kind.GPU else None

    def calibrated_j(self, device: DeviceInfo, raw_j: float) -> float:
        """`raw_j` with the device's calibration factor applied (unchanged if uncalibrated)."""
        cal = self.calibrations.get(device.uuid)
        return raw_j * cal.factor if cal is not None else raw_j

    def fraction_seen(self, device: DeviceInfo) -> float:
        """Share of the time the device's power readings observe (1 for a sensor without a profile: RAPL)."""
        profile = self.profile(device)
        return profile.observed_fraction if profile is not None else 1.0

    def band(self, device: DeviceInfo, x: BandInputs) -> tuple[float, float]:
        """(low_j, high_j) that true energy lies in, for `device` and the span `x` describes."""
        parts = self.band_parts(device, x)
        return parts.low_j, parts.high_j

    def band_parts(self, device: DeviceInfo, x: BandInputs) -> Band:
        """The band of `band`, with the part of each side that is sampling error (see `Band`)."""
        gap_j = x.gap_s * x.p_max_w
        if device.source is Source.ESTIMATED:
            return Band(x.energy_j * (1 - self.estimated_rel), x.energy_j * (1 + self.estimated_rel) + gap_j)
        profile = self.profile(device)
        lo_f, hi_f = self._calibration(device, profile)
        f = profile.observed_fraction if profile is not None else 1.0
        integrates_true = profile is not None and profile.counter_integrates_true is True
        trusted = x.from_counter and (integrates_true or x.counter_true)
        po = random = 0.0
        if f < 1 and trusted:  # the counter saw all of it: no partial observation, sampling or aliasing
            po = 0.0 if integrates_true else self.trusted_floor_rel
        elif f < 1 and x.alias_rel is not None:  # a repetition: a systematic error, bounded from the samples
            po = max(self.floor_rel, x.alias_rel)
        elif f < 1:
            po = self.sampling_rel(x.cv, x.publications)
            random = max(po - self.floor_rel, 0.0)  # the z x cv / sqrt(n) part; the floor is systematic
        low, random_low = x.energy_j * lo_f * (1 - po), x.energy_j * lo_f * random
        high, random_high = x.energy_j * hi_f * (1 + po), x.energy_j * hi_f * random
        if x.phase_lock and f < 1 and not trusted and x.alias_rel is None:
            # the lock's floor, where wider, is a systematic bound: no sampling error left in that side
            seen_j = x.sampled_j if x.sampled_j is not None else x.energy_j
            if (lock_low := f * seen_j * lo_f) < low:
                low, random_low = lock_low, 0.0
            if (lock_high := f * seen_j * hi_f + (1 - f) * x.p_max_w * x.measured_s) > high:
                high, random_high = lock_high, 0.0
        if x.from_counter and x.from_first and profile is not None and profile.counter_step_mj:
            step_j = profile.counter_step_mj / 1e3  # first and last readings quantised: within one step
            low, high = max(low - step_j, 0.0), high + step_j
        low, high = max(low - x.doubt_j * lo_f, 0.0), high + x.doubt_j * hi_f
        return Band(low, high + gap_j, random_low, random_high)

    def sampling_rel(self, cv: float, publications: int) -> float:
        """Relative error partial observation may cause, for values of variation `cv` over `publications`."""
        n_eff = max(publications / self.correlated_publications, 1.0)
        return min(self.floor_rel + self.z * cv / math.sqrt(n_eff), 1.0)

    def _calibration(self, device: DeviceInfo, profile: SensorProfile | None) -> tuple[float, float]:
        """Factors taking a reading to the lowest and highest truth it allows."""
        cal = self.calibrations.get(device.uuid)
        if cal is not None:
            return 1 - cal.uncertainty_rel, 1 + cal.uncertainty_rel
        if profile is not None:
            return profile.gain_factors()
        return 1 / (1 + self.other_gain_rel), 1 / (1 - self.other_gain_rel)


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

    `values_w` are consecutive publications (one per publication period P). They
    repeat after m values when the score 1 - mean((x_i - x_{i-m})^2) / (2 var x)
    reaches `min_score` (~1 for an exact repeat, near the autocorrelation
    otherwise; the smallest such lag wins; a series varying less than `min_cv`
    proves nothing). The pattern then spans m x P = k load periods and the
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
