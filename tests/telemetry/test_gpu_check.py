"""bench.gpu_check on the simulated GPU (fake pynvml, FakeClock): the decision names the counter."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Literal
from unittest.mock import MagicMock

import pytest

from bench.gpu_check import CheckConfig, GpuCheck, main
from bench.gpu_loads import LoadUnavailable, Pattern, ScheduleTrace, TorchLoad, simulated_gpu
from bench.gpu_verdict import classify, print_table
from wattlog.clock import FakeClock
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml, install
from wattlog.telemetry.sensors.traces import ConstantTrace, SquareWave

# short steady/idle/poll steps; waves long enough that run ends don't blur the unlocked controls
FAST = CheckConfig(
    steady_s=4.0, idle_s=2.0, wave_s=10.0, poll_s=2.0, calls=30, agent_rounds=1, agent_block_s=0.1
)


@pytest.mark.parametrize(("counter", "phase_s"), [("true", 0.061), ("observed", 0.0874)])
def test_decision_names_how_the_simulated_counter_integrates(
    counter: Literal["true", "observed"], phase_s: float, tmp_path: Path
) -> None:
    clock = FakeClock(start_s=1234.5678)  # the sensor's grid sits anywhere relative to the clock
    gpu, load = simulated_gpu(counter, clock, phase_s=phase_s)
    fake = FakeNvml([gpu], clock)
    out = tmp_path / "gpu_check.json"
    with install(fake):  # the check imports pynvml itself, as on a real machine
        report = GpuCheck(load, FAST, clock=clock, out=out, echo=lambda _line: None).run()

    analysis = report["analysis"]
    assert analysis["verdict"]["answer"] == counter, analysis["verdict"]["reasons"]
    calls = analysis["calls"]
    assert len(calls) == 4 and {c["says"] for c in calls} == {counter}
    # the locked runs really saw one phase each: off (80 W) with the window in off, on (600 W) with it in on
    sampled = {c["run"]: c["sampled_w"] for c in calls}
    assert sampled["50/50 locked, window in off"] == pytest.approx(80.0, rel=0.03)
    assert sampled["50/50 locked, window in on"] == pytest.approx(600.0, rel=0.03)
    assert all(c["ok"] for c in analysis["controls"])
    assert report["anchors"] and report["anchors"][-1]["publication_s"] == pytest.approx(0.1, rel=1e-3)
    assert json.loads(out.read_text())["analysis"]["verdict"]["answer"] == counter
    assert fake.shutdown_calls == fake.init_calls  # every NvmlSensor it opened was closed


def test_steady_run_compares_counter_with_both_power_readings(tmp_path: Path) -> None:
    clock = FakeClock()
    gpu, load = simulated_gpu("true", clock)
    report = GpuCheck(load, FAST, nvml=FakeNvml([gpu], clock), clock=clock, echo=lambda _line: None).run()
    runs = {r["name"]: r for r in report["runs"]}
    steady = runs["steady"]
    assert steady["counter_w"] == pytest.approx(600.0, rel=0.005)  # the ripple averages out
    assert steady["instant_vs_counter_rel"] == pytest.approx(0.0, abs=0.01)
    assert steady["power_usage_vs_counter_rel"] == pytest.approx(0.0, abs=0.01)
    assert runs["idle"]["counter_w"] == pytest.approx(80.0, rel=0.005)  # the settle time hides the step
    costs = report["call_cost"]
    assert set(costs) >= {
        "nvmlDeviceGetFieldValues([186, 83])",  # the hot path's one call
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetEnforcedPowerLimit",
        "NvmlSensor.read (hot path)",
        "NvmlSensor.read (with slow metrics)",
        "nvmlDeviceGetTotalEnergyConsumption",
        "nvmlDeviceGetFieldValues([186])",
    }
    assert all(c["calls"] == FAST.calls and c["median_us"] > 0 and not c["error"] for c in costs.values())
    assert report["updates"]["counter"]["fitted_s"] == pytest.approx(0.1, rel=0.02)
    cadence = report["field_cadence"]  # the driver's own timestamps, read every 2 ms
    assert cadence["field 186 (power)"]["median_ms"] == pytest.approx(100.0, rel=1e-3)
    assert cadence["field 83 (energy)"]["median_ms"] == pytest.approx(100.0, rel=1e-3)
    assert cadence["reads_per_publication"] == pytest.approx(50.0, rel=0.05)
    cost = report["agent_cost"]  # the step timed with the agent sampling at 25 ms, and without
    assert cost["plain_step_ms"] > 0 and cost["agent_step_ms"] > 0 and cost["ratio"] > 0
    assert report["devices"][0]["source"] == "simulated"  # never shown as a measurement
    lines: list[str] = []
    print_table(report, lines.append)
    assert any("verdict: the energy counter integrates TRUE power" in line for line in lines)
    assert any(line.startswith("steady energy over") and "field-186 trapezoid" in line for line in lines)
    assert any(line.startswith("field 186 (power) timestamps:") and "100.00 ms" in line for line in lines)
    assert any("step time (matmul + sync):" in line for line in lines)


def test_a_tight_budget_skips_steps_and_says_so() -> None:
    clock = FakeClock()
    gpu, load = simulated_gpu("true", clock)
    config = CheckConfig(steady_s=4.0, idle_s=2.0, wave_s=10.0, poll_s=2.0, calls=5, budget_s=30.0)
    report = GpuCheck(  # the budget counts simulated seconds here
        load, config, nvml=FakeNvml([gpu], clock), clock=clock, timer=clock.monotonic, echo=lambda _line: None
    ).run()
    assert report["skipped"][0].startswith("50/50 locked, window in off: 12.7 s would overrun")
    assert report["elapsed_s"] <= 30.0
    assert report["analysis"]["verdict"]["answer"] == "inconclusive"  # no locked run fitted


@pytest.mark.parametrize(
    ("counter_w", "sampled_w", "says"),
    [
        (340.0, 80.0, "true"),
        (82.0, 80.0, "observed"),
        (340.0, 330.0, "not locked"),
        (200.0, 80.0, "inconclusive"),
    ],
)
def test_classify(counter_w: float, sampled_w: float, says: str) -> None:
    assert classify(counter_w, sampled_w, 340.0, 0.05, 0.10)[0] == says


def test_schedule_trace_is_exact_across_switches() -> None:
    schedule = ScheduleTrace(80.0)
    schedule.switch(10.0, SquareWave(600.0, 80.0, 0.05, 0.05))
    schedule.switch(20.0, ConstantTrace(300.0))
    assert schedule.energy_j(-1.0, 10.0) == pytest.approx(880.0)
    assert schedule.energy_j(10.0, 20.0) == pytest.approx(3400.0)
    assert schedule.energy_j(0.0, 21.0) == pytest.approx(800.0 + 3400.0 + 300.0)
    assert schedule.power_w(10.01) == 600.0 and schedule.power_w(10.07) == 80.0
    assert Pattern(0.3, 0.1).label() == "30/70 @100.0 ms +0 ms"


def test_main_simulated_writes_json_and_prints_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "check.json"
    args = ["--simulate", "observed", "--out", str(out), "--steady-s", "4", "--idle-s", "2", "--poll-s", "2"]
    assert main([*args, "--calls", "20", "--agent-rounds", "1", "--agent-block-s", "0.1"]) == 0
    assert "integrates only the OBSERVED windows" in capsys.readouterr().out
    assert json.loads(out.read_text())["analysis"]["verdict"]["answer"] == "observed"


class _FakeTorch:
    """Just enough of torch for TorchLoad: products advance a FakeClock by their time at 1 PFLOP/s."""

    __version__ = "0.0-fake"
    bfloat16 = "bf16"

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.products: list[tuple[float, int]] = []  # (start time, size)
        self.cuda = SimpleNamespace(
            is_available=lambda: True,
            get_device_properties=lambda _d: SimpleNamespace(name="Fake H100", uuid="1234-abcd"),
            Event=self._event,
            synchronize=lambda: None,
        )

    def device(self, *_args: object) -> str:
        return "cuda:0"

    def randn(self, n: int, *_args: object, **_kwargs: object) -> int:
        return n

    empty = randn

    def matmul(self, a: int, _b: int, out: int) -> int:
        self.products.append((self.clock.monotonic(), a))
        self.clock.advance(2 * a**3 / 1e15)
        return out

    def _event(self, enable_timing: bool) -> SimpleNamespace:
        event = SimpleNamespace(t=0.0)
        event.record = lambda: setattr(event, "t", self.clock.monotonic())
        event.elapsed_time = lambda end: (end.t - event.t) * 1e3
        return event


def test_torch_load_picks_a_size_and_plays_square_waves_on_absolute_times() -> None:
    clock = FakeClock(start_s=100.0)
    torch = _FakeTorch(clock)
    load = TorchLoad(max_matmul_s=0.002, clock=clock, torch=torch)
    info = load.prepare()
    assert info["size"] == 8192 and info["matmul_ms"] == pytest.approx(1.0995, rel=1e-3)
    assert load.gpu_uuid() == "GPU-1234-abcd"
    torch.products.clear()
    clock.advance(101.0 - clock.monotonic())  # prepare() took its time; start on a round one
    sampler = MagicMock()  # entered and left around the load; it would sample in its thread
    load.play(Pattern(0.3, 0.1, phase_s=0.02), 1.0, sampler)
    sampler.__enter__.assert_called_once()
    starts = [t for t, _n in torch.products]
    assert clock.monotonic() == pytest.approx(102.0)  # the whole duration, not more
    bursts = [t for i, t in enumerate(starts) if i == 0 or t - starts[i - 1] > 0.01]
    assert [round(t % 0.1, 6) for t in bursts] == [0.02] * 10  # on phases at 0.02 + k x 0.1
    busy_s = len(starts) * 0.0010995
    assert busy_s == pytest.approx(0.3, abs=0.02)  # 30 % of 1 s, within a product per burst


def test_torch_load_without_cuda_is_unavailable() -> None:
    torch = _FakeTorch(FakeClock())
    torch.cuda.is_available = lambda: False
    with pytest.raises(LoadUnavailable, match="sees no CUDA GPU"):
        TorchLoad(torch=torch).prepare()
