"""Power traces: exact integrals, repeat/hold semantics, CSV errors, seeded generation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from wattlog.errors import ConfigError
from wattlog.telemetry.sensors.traces import (
    ConstantTrace,
    CsvTrace,
    PiecewiseTrace,
    SquareWave,
    Trace,
    TrainingTrace,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"


def test_constant_trace_integral_is_power_times_time() -> None:
    trace = ConstantTrace(300.0)
    assert isinstance(trace, Trace)
    assert trace.power_w(-5.0) == trace.power_w(1e6) == 300.0
    assert trace.energy_j(2.5, 12.5) == pytest.approx(3000.0)
    assert trace.duration_s == math.inf


def test_piecewise_energy_is_exact_across_segments_and_holds_last_value() -> None:
    trace = PiecewiseTrace([0.0, 1.0, 3.0], [100.0, 200.0, 50.0], 4.0)
    assert trace.power_w(0.999) == 100.0
    assert trace.power_w(1.0) == 200.0
    assert trace.energy_j(0.5, 3.5) == pytest.approx(50 + 400 + 25)
    assert trace.energy_j(10.0, 12.0) == pytest.approx(100.0)  # holds 50 W beyond duration
    assert trace.energy_j(-2.0, 0.0) == pytest.approx(200.0)  # first value before 0
    assert trace.energy_j(3.5, 0.5) == pytest.approx(-475.0)


def test_repeating_trace_integrates_whole_periods() -> None:
    trace = PiecewiseTrace([0.0, 1.0], [100.0, 0.0], 4.0, repeats=True)
    assert trace.power_w(8.5) == 100.0
    assert trace.power_w(9.5) == 0.0
    assert trace.energy_j(0.0, 400.0) == pytest.approx(100 * 100.0)
    assert trace.energy_j(-4.0, 0.0) == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("on_s", "off_s", "phase_s"), [(0.05, 0.05, 0.0), (0.03, 0.07, 0.0), (0.05, 0.05, 0.08), (1.0, 3.0, 2.5)]
)
def test_square_wave_energy_is_duty_cycle_exact(on_s: float, off_s: float, phase_s: float) -> None:
    wave = SquareWave(500.0, 100.0, on_s, off_s, phase_s)
    period_s = on_s + off_s
    expected_per_period_j = 500.0 * on_s + 100.0 * off_s
    assert wave.energy_j(0.0, 100 * period_s) == pytest.approx(100 * expected_per_period_j)
    assert wave.power_w(phase_s + on_s / 2) == 500.0
    assert wave.power_w(phase_s + on_s + off_s / 2) == 100.0


def test_square_wave_rejects_empty_phases() -> None:
    with pytest.raises(ConfigError, match="on_s > 0"):
        SquareWave(1.0, 0.0, 0.0, 1.0)


def test_csv_trace_holds_each_value_until_the_next_row() -> None:
    trace = CsvTrace.from_csv(DATA / "steps.csv")
    assert trace.duration_s == pytest.approx(1.5)  # shifted so the first row is at 0
    assert trace.power_w(0.5) == 100.0
    assert trace.power_w(1.2) == 300.0
    assert trace.energy_j(0.0, 3.5) == pytest.approx(100 + 150 + 2 * 50)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("t_s,power_w\n0,100\n1,abc\n", r"bad.csv:3: expected"),
        ("t_s,power_w\n0,100\n0,200\n", r"bad.csv:3: time 0.0 does not increase"),
        ("t_s,power_w\n0,-1\n", r"bad.csv:2: .*>= 0"),
        ("time,watts\n0,1\n", "header"),
        ("t_s,power_w\n", "no data rows"),
        ("t_s,power_w\n0\n", r"bad.csv:2:"),
    ],
)
def test_csv_trace_names_the_malformed_line(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        CsvTrace.from_csv(path)


def test_csv_trace_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read trace"):
        CsvTrace.from_csv(tmp_path / "absent.csv")


def test_training_trace_is_deterministic_by_seed() -> None:
    a = TrainingTrace.generate(seed=7, duration_s=300.0)
    b = TrainingTrace.generate(seed=7, duration_s=300.0)
    c = TrainingTrace.generate(seed=8, duration_s=300.0)
    assert a.segments == b.segments
    assert a.segments != c.segments
    assert a.seed == 7


def test_training_trace_energy_matches_a_sum_over_its_segments() -> None:
    trace = TrainingTrace.generate(seed=3, duration_s=200.0, vary="step")
    segs = trace.segments
    ends = [s for s, _ in segs[1:]] + [trace.duration_s]
    expected_j = sum(p * (end - start) for (start, p), end in zip(segs, ends, strict=True))
    assert trace.energy_j(0.0, 200.0) == pytest.approx(expected_j, rel=1e-12)
    assert trace.energy_j(0.0, 600.0) == pytest.approx(3 * expected_j, rel=1e-12)  # repeats


def test_training_trace_has_compute_comm_and_checkpoint_stalls() -> None:
    trace = TrainingTrace.generate(
        seed=1,
        duration_s=130.0,
        step_s=(0.5, 0.5),
        compute_w=600.0,
        comm_w=300.0,
        idle_w=80.0,
        checkpoint_every_s=60.0,
        checkpoint_s=5.0,
        jitter=0.0,
        power_jitter=0.0,
    )
    powers = [p for _, p in trace.segments]
    assert set(powers) == {600.0, 300.0, 80.0}
    stalls = [s for s, p in trace.segments if p == 80.0]
    assert stalls == pytest.approx([60.0, 125.0])
    assert trace.power_w(0.1) == 600.0  # compute first ...
    assert trace.power_w(0.45) == 300.0  # ... then the comm dip (last 20 % of the step)
    assert trace.power_w(62.0) == 80.0


def test_training_trace_rejects_bad_step_range() -> None:
    with pytest.raises(ConfigError, match="step_s"):
        TrainingTrace.generate(seed=0, duration_s=10.0, step_s=(2.0, 1.0))


def test_phase_locked_trace_has_exact_sensor_period() -> None:
    trace = TrainingTrace.phase_locked(period_s=0.1, compute_w=600.0, comm_w=200.0, comm_fraction=0.5)
    assert trace.duration_s == pytest.approx(0.1)
    for k in range(0, 10_000, 997):  # still locked after many periods
        assert trace.power_w(k * 0.1 + 0.025) == 600.0
        assert trace.power_w(k * 0.1 + 0.075) == 200.0
    assert trace.energy_j(0.0, 1000.0) == pytest.approx(400.0 * 1000.0)
