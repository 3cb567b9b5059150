"""Power fluctuation on a simulated training trace with checkpoint dips: the dips found, depth within 5 %."""

from __future__ import annotations

import pytest

from wattlog.accounting.publishing.power import Segment, find_dips, job_series, power_fluctuation
from wattlog.errors import ConfigError
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.sensors.traces import TrainingTrace

GPUS = 8
DURATION_S = 600.0
CHECKPOINT_W = 100.0


def row(host: str, device: str, kind: str, start_s: float, end_s: float, energy_j: float) -> EnergyInterval:
    """A ledger row as the ledger stores and reads it back (exact: the band plays no part in power)."""
    return EnergyInterval.of(
        host, device, Kind(kind), Source.COUNTER, start_s, end_s, energy_j, energy_j, energy_j
    )


def sampled(trace: TrainingTrace, period_s: float = 1.0, gpus: int = GPUS) -> list[EnergyInterval]:
    """The trace's exact energy per sample period, as ledger-like rows for `gpus` synchronised GPUs."""
    rows = []
    for i in range(int(DURATION_S / period_s)):
        t0, t1 = i * period_s, (i + 1) * period_s
        for g in range(gpus):
            rows.append(row("node0", f"GPU-{g}", "gpu", t0, t1, trace.energy_j(t0, t1)))
    return rows


@pytest.fixture(scope="module")
def trace() -> TrainingTrace:
    return TrainingTrace.generate(
        seed=3, duration_s=DURATION_S, step_s=(0.47, 0.47), compute_w=650.0, comm_w=350.0,
        comm_fraction=0.2, checkpoint_every_s=60.0, checkpoint_s=5.0, checkpoint_w=CHECKPOINT_W,
        jitter=0.0, power_jitter=0.0,
    )  # fmt: skip


def true_stalls(trace: TrainingTrace) -> list[tuple[float, float]]:
    segments = trace.segments + [(DURATION_S, -1.0)]
    return [(s, e) for (s, p), (e, _) in zip(segments, segments[1:], strict=False) if p == CHECKPOINT_W]


def test_checkpoint_dips_are_found_with_their_depth_within_5_percent(trace: TrainingTrace) -> None:
    stalls = true_stalls(trace)
    assert len(stalls) >= 8
    figures = power_fluctuation(sampled(trace), limit_w=700.0)
    assert figures is not None
    assert len(figures.dips) == len(stalls)
    training_w = GPUS * (0.8 * 650.0 + 0.2 * 350.0)  # 80 % of each step computing, 20 % communicating
    true_depth = 1 - GPUS * CHECKPOINT_W / training_w
    assert any(start % 1 for start, _ in stalls)  # stalls that do not line up with the 1 s samples
    for dip, (start, end) in zip(figures.dips, stalls, strict=True):
        assert abs(dip.depth - true_depth) <= 0.05 * true_depth
        assert abs(dip.start_s - start) < 1 and abs(dip.end_s - end) < 1  # located to the sample
        assert abs(dip.duration_s - (end - start)) <= 0.05 * (end - start)
    assert figures.median_w == pytest.approx(training_w, rel=0.02)


def test_percent_of_limit_swing_and_ramp(trace: TrainingTrace) -> None:
    figures = power_fluctuation(sampled(trace), limit_w=700.0)
    assert figures is not None and figures.limit_pct is not None
    low, median, high = figures.limit_pct
    assert low == pytest.approx(100 * CHECKPOINT_W / 700, abs=0.5)  # the stall, 14 % of 700 W
    assert median == pytest.approx(100 * 590 / 700, abs=1.5)  # a 1 s sample holds 2 or 3 partial steps
    assert high <= 100 * 650 / 700 + 0.5
    assert figures.swing_w == pytest.approx(GPUS * (590 - CHECKPOINT_W), rel=0.03)
    assert figures.ramp_w_per_s >= GPUS * (590 - CHECKPOINT_W) * 0.5  # within one 1 s sample or two
    assert figures.resolution_s == 1.0


def test_coarse_flushes_smear_short_dips_and_say_their_resolution(trace: TrainingTrace) -> None:
    figures = power_fluctuation(sampled(trace, period_s=10.0), limit_w=700.0)
    assert figures is not None and figures.resolution_s == 10.0
    for dip in figures.dips:
        assert dip.depth < 1 - CHECKPOINT_W / 590  # shallower than the true stall


def test_job_series_sums_devices_and_counts_node_meters_alone() -> None:
    rows = [
        row("a", "GPU-0", "gpu", 0, 10, 1000.0),
        row("a", "GPU-1", "gpu", 0, 10, 1000.0),
        row("b", "GPU-0", "gpu", 0, 10, 500.0),
        row("b", "node", "node", 0, 10, 3000.0),
    ]
    assert job_series(rows) == [Segment(0, 10, 500.0)]  # a: 100 + 100 W, b: its node meter, 300 W


def test_no_rows_and_a_bad_threshold() -> None:
    assert power_fluctuation([], limit_w=700.0) is None
    with pytest.raises(ConfigError, match="between 0 and 1"):
        find_dips([Segment(0, 1, 1.0)], threshold=1.5)
