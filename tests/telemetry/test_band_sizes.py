"""The size of the band's terms, not only their direction (issue 38: mutations that survived).

Two mutations passed every telemetry test: the publications' cv scaled by 1.41 (the von Neumann
estimate without its /2), and the counter's quantisation step dropped from the band's high side.
Each test here pins a term to the number its formula gives.
"""

from __future__ import annotations

import math

import pytest

from wattlog.records import Kind, Source
from wattlog.telemetry.devicestate import Publications
from wattlog.telemetry.types import DeviceInfo, SensorProfile
from wattlog.telemetry.uncertainty import BandInputs, BandModel

GPU = DeviceInfo("g", "g", Kind.GPU, Source.COUNTER, True, power_limit_w=700.0)


def test_the_publications_cv_is_the_von_neumann_estimate_of_their_variation() -> None:
    """Alternating 100 W / 200 W: successive differences of 100 W, so sqrt(100^2 / 2) / 150 W."""
    pubs = Publications()
    for i in range(1001):
        pubs.add(0.1 * i, 100.0 if i % 2 else 200.0)
    assert pubs.cv() == pytest.approx(100.0 / math.sqrt(2) / 150.0, rel=1e-3)


def test_the_sampling_term_is_z_cv_over_root_n_less_the_floor() -> None:
    """cv 0.2 over 1,000 publications (n_eff 100): 3 x 0.2 / 10 = 6 %, of which 5.5 % is random."""
    model = BandModel()
    x = BandInputs(1000.0, 1000.0, False, 10.0, 0.0, 700.0, cv=0.2, publications=1000)
    band = model.band_parts(GPU, x)
    lo_f, hi_f = model._calibration(GPU, model.profile(GPU))
    random = 3.0 * 0.2 / 10.0  # the floor (0.5 %) is systematic, not part of it
    assert band.random_low_j == pytest.approx(1000.0 * lo_f * random)
    assert band.random_high_j == pytest.approx(1000.0 * hi_f * random)
    assert band.low_j == pytest.approx(1000.0 * lo_f * (1 - random - 0.005))


def test_the_counters_quantisation_step_widens_both_sides_of_the_first_span() -> None:
    """A BMC counter that steps by 3.6 kJ: the first span's band is one step wider on each side."""
    bmc = SensorProfile("bmc", "BMC", -0.1, 0.1, 1.0, 5.0, counter_unit="kWh", counter_step_mj=3.6e6)
    node = DeviceInfo("n", "node", Kind.NODE, Source.COUNTER, True, profile=bmc)
    model = BandModel()
    x = BandInputs(100_000.0, None, True, 600.0, 0.0, 2000.0)
    later = model.band_parts(node, x)
    first = model.band_parts(node, BandInputs(100_000.0, None, True, 600.0, 0.0, 2000.0, from_first=True))
    assert first.low_j == pytest.approx(later.low_j - 3600.0)
    assert first.high_j == pytest.approx(later.high_j + 3600.0)
