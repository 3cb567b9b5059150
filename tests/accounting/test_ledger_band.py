"""The band a run's table shows (from the ledger) is the band the live agent shows, not 2-3 times it.

The agent stores one row per device per 10 s flush, each with its own band. The
sampling-error part of each row's band (z x cv / sqrt(n) over that row's few
publications) is independent between rows, so adding the rows' bands linearly
made an hour's band 19 times too wide in that part: on simulated training
traces, -17 %/+24 % and -26 %/+34 % where the agent itself said -8 %/+13 %.
"""

from __future__ import annotations

import pytest

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.clock import FakeClock
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.sensors.simulated import simulated_gpus
from wattlog.telemetry.sensors.traces import TrainingTrace


def test_a_runs_ledger_band_is_the_live_agents_band(tmp_path) -> None:
    clock = FakeClock()
    fake = FakeNvml(simulated_gpus(2, lambda i: TrainingTrace.generate(i, 300.0)), clock)
    sensor = NvmlSensor(fake)
    integrator = Integrator(sensor.devices(), host="node0", clock=clock, period_s=0.025)
    sampler = Sampler([sensor], integrator, period_s=0.025, clock=clock)
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'ledger.db'}"), clock=clock)
    run = ledger.start_run("r")
    linear: dict[str, list[float]] = {}
    for flush in range(1, 31):  # 300 s, flushed every 10 s as the agent does
        sampler.run_until(10.0 * flush)
        intervals, gaps = integrator.take_intervals()
        assert not gaps
        ledger.record_intervals(run.id, intervals)
        ledger.record_revisions(run.id, integrator.take_revisions())  # as the agent hands them on
        for row in intervals:
            sums = linear.setdefault(row.device, [0.0, 0.0])
            sums[0] += row.low_j
            sums[1] += row.high_j
    live = {e.device.uuid: e for e in integrator.snapshot()}
    totals = ledger.energy_totals(run.id)
    assert {t.device for t in totals} == live.keys()
    for total in totals:
        agent = live[total.device]
        assert total.energy_j == pytest.approx(agent.energy_j, rel=1e-9)
        # the same band to 0.1 % of the energy, where the linear sum is several percent wider
        assert total.low_j == pytest.approx(agent.low_j, abs=1e-3 * agent.energy_j)
        assert total.high_j == pytest.approx(agent.high_j, abs=1e-3 * agent.energy_j)
        low_linear, high_linear = linear[total.device]
        # 2 %, was 3 % before issue 21: once the counter is shown true, rows carry no sampling term,
        # so less is left for the quadrature sum to save (measured: 2.3 % below, more above)
        assert agent.low_j - low_linear > 0.02 * agent.energy_j
        assert high_linear - agent.high_j > 0.02 * agent.energy_j
