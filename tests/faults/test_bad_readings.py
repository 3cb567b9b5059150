"""Fault: non-finite or negative readings, NaN token counts, a sink that refuses rows as invalid.

On the old code one NaN power reading made the device's energy NaN for good,
the ledger then refused every later flush and the agent retried the same rows
forever; one NaN token count made wattlog_train_tokens_total NaN for good.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from prometheus_client import CollectorRegistry

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError
from wattlog.records import EnergyInterval, Gap, Kind, Source
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.types import DeviceInfo, Reading

POWER_W = 100.0
BAD_FROM_S, BAD_TO_S, END_S = 1.0, 1.5, 3.0


class BadStretchSensor:
    """100 W, except a stretch [1.0, 1.5) s where the power (or counter) reads `bad`."""

    def __init__(self, bad: float, *, counter: bool = False) -> None:
        self.info = DeviceInfo("GPU-bad", "board", Kind.GPU, Source.SAMPLED, has_counter=counter)
        self.bad, self.counter = bad, counter

    def devices(self) -> list[DeviceInfo]:
        return [self.info]

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        broken = BAD_FROM_S <= t_s < BAD_TO_S
        if self.counter:
            return Reading(device.uuid, t_s, energy_mj=self.bad if broken else POWER_W * t_s * 1e3)
        return Reading(device.uuid, t_s, power_w=self.bad if broken else POWER_W)

    def close(self) -> None:
        pass


def integrate(sensor: BadStretchSensor) -> Integrator:
    clock = FakeClock()
    integrator = Integrator(sensor.devices(), host="n", clock=clock)
    Sampler([sensor], integrator, clock=clock).run_until(END_S)
    return integrator


@pytest.mark.parametrize("bad", [math.nan, math.inf, -50.0])
def test_a_bad_power_reading_is_a_gap_never_energy(bad: float) -> None:
    integrator = integrate(BadStretchSensor(bad))
    [device] = integrator.snapshot()
    assert math.isfinite(device.energy_j) and math.isfinite(device.high_j)
    # 100 W for the 2.5 s that read well; the bad stretch is a gap, not interpolated
    assert device.energy_j == pytest.approx(POWER_W * (END_S - (BAD_TO_S - BAD_FROM_S)), rel=0.03)
    assert device.gap_count == 1 and device.gap_s == pytest.approx(BAD_TO_S - BAD_FROM_S, abs=0.05)
    _, [gap] = integrator.take_intervals()
    assert "invalid power reading" in gap.reason


@pytest.mark.parametrize("bad", [math.nan, -1.0])
def test_a_bad_counter_reading_is_never_energy(bad: float) -> None:
    [device] = integrate(BadStretchSensor(bad, counter=True)).snapshot()
    assert math.isfinite(device.energy_j)
    # the counter bridges the stretch exactly once it reads again: 100 W x 3 s
    assert device.energy_j == pytest.approx(POWER_W * END_S, rel=0.02)


def test_the_ledger_keeps_taking_flushes_after_a_nan_reading(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("nan")
    integrator = integrate(BadStretchSensor(math.nan))
    intervals, gaps = integrator.take_intervals()
    assert ledger.record_intervals(run.id, intervals, gaps) == 1
    [total] = ledger.energy_totals(run.id)
    assert math.isfinite(total.energy_j) and len(ledger.gaps(run.id)) == 1


class RefusingSink:
    """Refuses (ConfigError) every row of device GPU-x; counts how often it saw each row."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, float], int] = {}
        self.rows: list[EnergyInterval] = []
        self.gaps: list[Gap] = []

    def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        for row in intervals:
            key = (row.device, row.start_s)
            self.seen[key] = self.seen.get(key, 0) + 1
        if any(row.device == "GPU-x" for row in intervals):
            raise ConfigError("energy of GPU-x is not acceptable here")
        self.rows.extend(intervals)
        self.gaps.extend(gaps)

    def close(self) -> None:
        pass


class TwoDevices:
    def __init__(self) -> None:
        self.infos = [
            DeviceInfo(uuid, uuid, Kind.GPU, Source.SAMPLED, has_counter=False)
            for uuid in ("GPU-ok", "GPU-x")
        ]

    def devices(self) -> list[DeviceInfo]:
        return list(self.infos)

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        return Reading(device.uuid, t_s, power_w=POWER_W)

    def close(self) -> None:
        pass


def test_rows_a_sink_refuses_become_gaps_and_a_counter_and_are_not_retried(tmp_path) -> None:
    sink = RefusingSink()
    registry = CollectorRegistry()
    config = AgentConfig(port=None, flush_s=3600, host="n", lock_dir=tmp_path / "locks", period_s=0.01)
    with Agent(config, sensors=[TwoDevices()], sinks=[sink], registry=registry) as agent:
        for _ in range(3):
            agent._sampler.tick()  # type: ignore[union-attr]  (readings without waiting on real time)
            agent._sampler.tick()  # type: ignore[union-attr]
            agent.flush()
        counted = registry.get_sample_value("wattlog_sink_rejected_rows_total", {"host": "n", "run": ""})
        assert counted == agent.sink_stats.rejected_rows == 3
        written = registry.get_sample_value("wattlog_sink_rows_total", {"host": "n", "run": ""})
        assert written == len(sink.rows) == 3
    refused = [key for key in sink.seen if key[0] == "GPU-x"]
    # each refused row reached the sink twice (the batch, then alone) and never again
    assert refused and all(sink.seen[key] == 2 for key in refused)
    assert {row.device for row in sink.rows} == {"GPU-ok"}
    assert {gap.device for gap in sink.gaps} == {"GPU-x"} and "rejected as invalid" in sink.gaps[0].reason
    assert len(refused) == agent.sink_stats.rejected_rows  # the final flush at close too


def test_a_nan_token_count_never_poisons_the_token_counter() -> None:
    pytest.importorskip("torch")
    from wattlog.trainer.exporter import TrainingCollector, TrainingState
    from wattlog.trainer.metrics import StepRecord

    state = TrainingState()
    state.observe([StepRecord(1, 0.0, {"tokens": 100.0}), StepRecord(2, 0.1, {"tokens": math.nan})])
    state.observe([StepRecord(3, 0.2, {"tokens": 50.0}), StepRecord(4, 0.3, {"tokens": -7.0})])
    registry = CollectorRegistry()
    registry.register(TrainingCollector(state, "r"))
    tokens = registry.get_sample_value("wattlog_train_tokens_total", {"run": "r", "rank": "0", "host": ""})
    assert tokens == 150.0
    labels = {"run": "r", "rank": "0", "host": "", "kind": "invalid_tokens"}
    assert registry.get_sample_value("wattlog_train_events_total", labels) == 2.0
