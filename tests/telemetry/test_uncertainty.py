"""The band: calibration, partial observation, gaps, phase lock; and that it holds the truth."""

from __future__ import annotations

import random

import pytest

from wattlog.clock import FakeClock
from wattlog.errors import ConfigError
from wattlog.records import Kind, Source
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.simulated import SensorModel, SimulatedGpu, SimulatedSensor
from wattlog.telemetry.sensors.traces import Trace, TrainingTrace
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo
from wattlog.telemetry.uncertainty import BandInputs, BandModel, Calibration, analyse_repetition

GPU = DeviceInfo("g", "g", Kind.GPU, Source.COUNTER, True, power_limit_w=700.0)


def inputs(energy_j: float = 1000.0, **kw: object) -> BandInputs:
    base: dict[str, object] = dict(
        energy_j=energy_j, sampled_j=energy_j, from_counter=True, measured_s=10.0, gap_s=0.0, p_max_w=700.0
    )
    base.update(kw)
    return BandInputs(**base)  # type: ignore[arg-type]


def test_calibration_band_follows_the_sc24_gain_range() -> None:
    low, high = BandModel(floor_rel=0.0).band(GPU, inputs())
    # a reading is gain x truth, gain in [0.905, 1.064]
    assert low == pytest.approx(1000 / 1.064) and high == pytest.approx(1000 / 0.905)


def test_a_calibrated_gpu_gets_its_factor_and_a_narrow_band() -> None:
    model = BandModel(floor_rel=0.0, calibrations={"g": Calibration(factor=1.05, uncertainty_rel=0.01)})
    assert model.calibrated_j(GPU, 1000.0) == pytest.approx(1050.0)
    low, high = model.band(GPU, inputs(1050.0))
    assert (low, high) == (pytest.approx(1039.5), pytest.approx(1060.5))


def test_gaps_widen_the_high_side_by_the_power_bound() -> None:
    model = BandModel(floor_rel=0.0)
    low0, high0 = model.band(GPU, inputs())
    low, high = model.band(GPU, inputs(gap_s=2.0))
    assert low == low0 and high == pytest.approx(high0 + 1400.0)


def test_estimated_sources_get_a_wide_band() -> None:
    est = DeviceInfo("cpu", "cpu", Kind.CPU, Source.ESTIMATED, False)
    assert BandModel().band(est, inputs(from_counter=False)) == (500.0, 1500.0)


def test_partial_observation_shrinks_with_more_publications() -> None:
    model = BandModel()
    few = model.band(GPU, inputs(cv=0.4, publications=100))
    many = model.band(GPU, inputs(cv=0.4, publications=100_000))
    assert few[0] < many[0] and few[1] > many[1]
    known = BandModel(counter_integrates_true=True).band(GPU, inputs(cv=0.4, publications=100))
    assert known[0] > few[0]  # a counter known to integrate true power has no sampling term


def test_phase_lock_widens_the_band_to_what_the_observed_quarter_proves() -> None:
    low, high = BandModel().band(GPU, inputs(250.0, measured_s=1.0, phase_lock=True))
    assert low <= 0.25 * 250.0 / 1.0 and high >= 0.25 * 250.0 / 1.064 + 0.75 * 700.0


def test_the_model_refuses_an_inverted_gain_range() -> None:
    with pytest.raises(ConfigError):
        BandModel(gain_low=0.05, gain_high=0.06)


def test_an_exactly_repeating_series_at_few_phases_has_a_wide_bound() -> None:
    pattern = [650.0, 330.0, 250.0]
    values = [pattern[i % 3] for i in range(300)]
    times = [0.1 * i for i in range(300)]
    found = analyse_repetition(times, values)
    assert found is not None and (found.lag, found.steps_per_pattern) == (3, 1)
    assert found.load_period_s == pytest.approx(0.3)
    # V = 2 x 400 W over a mean of 410 W, 3 phases of 25 ms in 100 ms: (V / 2) x 0.75 / 3
    assert found.alias_rel == pytest.approx(400 * 0.75 / 3 / 410.0)


def test_a_training_like_series_or_a_steady_one_does_not_repeat() -> None:
    rng = random.Random(3)
    values = [rng.choice([650.0, 350.0]) * rng.uniform(0.97, 1.03) for _ in range(600)]
    assert analyse_repetition([0.1 * i for i in range(600)], values) is None
    steady = [400.0 + 0.1 * (i % 2) for i in range(600)]
    assert analyse_repetition([0.1 * i for i in range(600)], steady) is None


@pytest.mark.parametrize(("step_s", "steps", "max_rel"), [(0.23, 10, 0.0), (1.3, 1, 0.03), (2.0, 1, 0.02)])
def test_exact_multiple_steps_seen_at_many_phases_have_a_small_bound(
    step_s: float, steps: int, max_rel: float
) -> None:
    trace = TrainingTrace.generate(seed=5, duration_s=60.0, step_s=(step_s, step_s), jitter=0.0)
    gpu = SimulatedGpu("g", "sim", trace, SensorModel.h100().with_phase(0.037))
    times = [0.037 + 0.1 * k for k in range(100, 356)]
    found = analyse_repetition(times, [gpu.instant_power_w(t) for t in times])
    assert found is not None and found.steps_per_pattern == steps
    assert found.alias_rel <= max_rel


def run(trace: Trace, model: SensorModel, seconds: float = 120.0) -> tuple[DeviceEnergy, float]:
    """Sample one simulated GPU for `seconds` with a FakeClock; (snapshot, true energy)."""
    clock = FakeClock()
    gpu = SimulatedGpu("g", "sim", trace, model, power_limit_w=700.0)
    sensor = SimulatedSensor([gpu])
    integ = Integrator(sensor.devices(), host="h", clock=clock)
    Sampler([sensor], integ, clock=clock).run_until(seconds)
    return integ.snapshot()[0], gpu.true_energy_j(0.0, seconds - 0.025)


@pytest.mark.parametrize(
    ("seed", "gain", "counter"),
    [(1, 1.0, "true"), (2, 0.905, "true"), (3, 1.064, "observed"), (4, 0.95, "observed")],
)
def test_the_band_holds_true_energy_on_training_traces_without_flagging_them(
    seed: int, gain: float, counter: str
) -> None:
    trace = TrainingTrace.generate(seed=seed, duration_s=120.0, checkpoint_every_s=30.0, vary="step")
    e, true_j = run(trace, SensorModel.h100().with_gain(gain).with_counter(counter))  # type: ignore[arg-type]
    assert e.low_j <= true_j <= e.high_j
    assert not any("phase lock" in n for n in e.notes)


def test_a_lock_at_the_publication_period_is_caught_by_the_counter_and_the_band_holds() -> None:
    e, true_j = run(TrainingTrace.phase_locked(0.1), SensorModel.h100())
    assert any(n.startswith("phase lock suspected (sampled -44% vs counter)") for n in e.notes)
    assert e.low_j <= true_j <= e.high_j


def test_a_lock_at_four_periods_is_caught_from_the_published_values_alone() -> None:
    e, true_j = run(
        TrainingTrace.phase_locked(0.4, comm_fraction=0.3), SensorModel.h100().with_counter("observed")
    )
    assert any("published power repeats at 4 phases" in n and "~400 ms" in n for n in e.notes)
    assert e.low_j <= true_j <= e.high_j


def run_flushing(
    trace: Trace, model: SensorModel, seconds: float = 120.0
) -> tuple[DeviceEnergy, float, bool]:
    """As run(), with lock detection at every 10 s flush as the agent runs it; (snapshot, truth, flagged)."""
    clock = FakeClock()
    gpu = SimulatedGpu("g", "sim", trace, model, power_limit_w=700.0)
    sensor = SimulatedSensor([gpu])
    integ = Integrator(sensor.devices(), host="h", clock=clock)
    sampler = Sampler([sensor], integ, clock=clock)
    flagged = False
    for k in range(1, round(seconds / 10) + 1):
        sampler.run_until(10.0 * k)
        integ.take_intervals()
        flagged = flagged or any("phase lock" in n for n in integ.snapshot()[0].notes)
    return integ.snapshot()[0], gpu.true_energy_j(0.0, clock.monotonic()), flagged


@pytest.mark.parametrize(("step_s", "counter"), [(1.3, "observed"), (0.23, "true"), (2.0, "observed")])
def test_exact_multiple_steps_are_not_flagged_when_checked_every_flush_and_the_band_is_tight(
    step_s: float, counter: str
) -> None:
    trace = TrainingTrace.generate(
        seed=8, duration_s=200.0, step_s=(step_s, step_s), jitter=0.0, warmup_s=3.0
    )
    model = SensorModel.h100().with_counter(counter).with_phase(0.061)  # type: ignore[arg-type]
    e, true_j, flagged = run_flushing(trace, model, seconds=200.0)
    assert not flagged  # was flagged after ~20 s, and the band then fell to -77 %
    assert e.low_j <= true_j <= e.high_j
    assert (e.high_j - e.low_j) / 2 / true_j <= 0.12


def test_exact_200_ms_steps_seen_at_two_phases_are_a_lock_and_the_band_holds() -> None:
    trace = TrainingTrace.generate(seed=9, duration_s=120.0, step_s=(0.2, 0.2), jitter=0.0)
    # the windows see the compute burst at one phase and the 40 ms dip at the other
    e, true_j, flagged = run_flushing(trace, SensorModel.h100().with_counter("observed").with_phase(0.0))
    assert flagged and any("repeats at 2 phases" in n for n in e.notes)
    assert e.low_j <= true_j <= e.high_j
    assert e.low_j > 0.5 * true_j  # bounded from the samples, not the old -77 % floor


def test_the_sampling_error_part_is_the_sampling_term_without_its_floor() -> None:
    model = BandModel()
    x = inputs(cv=0.4, publications=100)
    band = model.band_parts(GPU, x)
    random_rel = model.sampling_rel(0.4, 100) - model.floor_rel
    assert random_rel > 0.1
    assert band.random_low_j == pytest.approx(1000 / 1.064 * random_rel)
    assert band.random_high_j == pytest.approx(1000 / 0.905 * random_rel)
    assert (band.low_j, band.high_j) == model.band(GPU, x)


@pytest.mark.parametrize(
    ("device", "model", "x"),
    [
        (GPU, BandModel(counter_integrates_true=True), inputs(cv=0.4, publications=100)),  # trusted counter
        (GPU, BandModel(), inputs(cv=0.4, publications=100, counter_true=True)),  # shown to be true
        (GPU, BandModel(), inputs(cv=0.4, publications=100, alias_rel=0.03)),  # a repetition's bound
        (DeviceInfo("c", "c", Kind.CPU, Source.ESTIMATED, False), BandModel(), inputs(from_counter=False)),
    ],
    ids=["counter-true", "counter-shown-true", "repetition", "estimated"],
)
def test_systematic_bands_have_no_sampling_error_part(
    device: DeviceInfo, model: BandModel, x: BandInputs
) -> None:
    band = model.band_parts(device, x)
    assert (band.random_low_j, band.random_high_j) == (0.0, 0.0)


def test_a_phase_lock_floor_that_widens_a_side_leaves_no_sampling_error_in_it() -> None:
    x = inputs(250.0, measured_s=1.0, phase_lock=True, cv=0.4, publications=100)
    band = BandModel().band_parts(GPU, x)
    assert band.low_j == pytest.approx(0.25 * 250.0 / 1.064)  # the lock's floor, systematic
    assert band.random_low_j == 0.0 and band.random_high_j == 0.0
