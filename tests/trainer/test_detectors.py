"""Detectors on synthetic series: spikes found, noise not, collapse and growth reported once."""

from __future__ import annotations

import math
import random

import pytest

from wattlog.errors import ConfigError
from wattlog.trainer.detectors import GrowthDetector, LossScaleDetector, NonFiniteDetector, SpikeDetector


def _noisy_loss(n: int, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [3.0 - 0.001 * i + rng.gauss(0, 0.02) for i in range(n)]


def test_spike_detector_flags_the_spike_and_not_the_noise() -> None:
    detector = SpikeDetector("loss_spike", window=50, k=6.0)
    series = _noisy_loss(200)
    series[150] = 4.5
    found = [d for step, v in enumerate(series) if (d := detector.update(step, v))]
    assert [d.step for d in found] == [150]
    assert found[0].kind == "loss_spike" and found[0].value == 4.5 and found[0].threshold < 4.5
    assert "step 150" in found[0].message


def test_spike_is_kept_out_of_the_window_so_a_second_spike_is_found() -> None:
    detector = SpikeDetector("grad_norm_spike", window=30, min_history=10)
    series = [1.0 + 0.01 * (i % 5) for i in range(60)]
    series[40] = series[45] = 10.0
    assert [s for s, v in enumerate(series) if detector.update(s, v)] == [40, 45]


def test_spike_detector_waits_for_history_and_ignores_non_finite() -> None:
    detector = SpikeDetector(window=20, min_history=10)
    assert all(detector.update(i, 1.0 if i else 100.0) is None for i in range(10))
    assert detector.update(11, math.nan) is None


def test_flat_series_does_not_flag_rounding_noise() -> None:
    detector = SpikeDetector(window=20, min_history=5)
    assert not [s for s in range(40) if detector.update(s, 2.0 + (1e-6 if s % 7 == 0 else 0.0))]


def test_non_finite_detector_flags_nan_and_inf() -> None:
    detector = NonFiniteDetector()
    assert detector.update(1, 2.0) is None
    assert detector.update(2, math.nan).kind == "non_finite"  # type: ignore[union-attr]
    assert detector.update(3, math.inf) is not None


def test_loss_scale_collapse_reported_once_until_it_recovers() -> None:
    detector = LossScaleDetector()
    scales = [2.0**16 / 2**k for k in range(25)]  # halving toward zero, as before OPT's divergences
    found = [s for s, v in enumerate(scales) if detector.update(s, v)]
    assert found == [21]  # 2**16 / 2**21 = 2**-5, metaseq's stopping point
    assert detector.update(30, 1.0) is None
    assert detector.update(31, 2.0**-6) is not None


def test_growth_detector_flags_growth_over_the_starting_level() -> None:
    detector = GrowthDetector(baseline=3, factor=4.0)
    norms = [10.0, 11.0, 9.0, 12.0, 20.0, 45.0, 50.0, 95.0]
    found = [d for s, v in enumerate(norms) if (d := detector.update(s, v))]
    assert [d.step for d in found] == [5, 7]  # 45 > 4 x 10, then 95 > 2 x 45
    assert found[0].kind == "activation_growth"


@pytest.mark.parametrize(
    "make",
    [
        lambda: SpikeDetector(window=2),
        lambda: SpikeDetector(k=0),
        lambda: LossScaleDetector(min_scale=0),
        lambda: GrowthDetector(factor=1.0),
    ],
)
def test_bad_detector_config_is_a_config_error(make: object) -> None:
    with pytest.raises(ConfigError):
        make()  # type: ignore[operator]
