"""The ledger stores band revisions beside the rows they revise, and its totals give the agent's band."""

from __future__ import annotations

import pytest

from wattlog.accounting.ledger import Ledger, LedgerSink, make_engine
from wattlog.clock import FakeClock
from wattlog.records import BandRevision, EnergyInterval, Kind, Source, band_of_sum
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.simulated import SensorModel, SimulatedGpu, SimulatedSensor
from wattlog.telemetry.sensors.traces import TrainingTrace


@pytest.fixture
def ledger(tmp_path) -> Ledger:  # type: ignore[no-untyped-def]
    return Ledger(make_engine(f"sqlite:///{tmp_path / 'ledger.db'}"))


def _row(start_s: float) -> EnergyInterval:
    return EnergyInterval.of(
        "h", "gpu0", Kind.GPU, Source.COUNTER, start_s, start_s + 10.0, 1000.0, 500.0, 1200.0
    )


def test_a_revision_is_stored_once_with_its_reason_and_the_totals_follow_it(ledger: Ledger) -> None:
    run = ledger.start_run("r")
    rows = [_row(0.0), _row(10.0)]
    ledger.record_intervals(run.id, rows)
    revision = BandRevision(
        "h", "gpu0", 0.0, 20.0, "band revised: phase lock ruled out", (800.0, -300.0, 0, 0, 0, 0)
    )
    assert ledger.record_revisions(run.id, [revision]) == 1
    assert ledger.record_revisions(run.id, [revision]) == 0  # a retry whose first commit landed
    [total] = ledger.energy_totals(run.id)
    assert (total.figure.low_j, total.figure.high_j) == pytest.approx(band_of_sum(rows, [revision]))
    assert [r.reason for r in ledger.band_revisions(run.id)] == [revision.reason]
    assert [(r.low_j, r.high_j) for r in ledger.energy_rows(run.id)] == [(500.0, 1200.0)] * 2  # as stored
    ledger.rebuild_totals(run.id)
    [rebuilt] = ledger.energy_totals(run.id)
    assert (rebuilt.figure.low_j, rebuilt.figure.high_j) == pytest.approx(
        (total.figure.low_j, total.figure.high_j)
    )


def test_the_tables_band_is_the_agents_on_a_lock_a_true_counter_exposes(ledger: Ledger) -> None:
    # a load locked at the 100 ms publication period, read by a counter that integrates true power:
    # the rows flushed in the first minute carry the lock's floor (-50 %); the agent, once the
    # counter is shown to integrate true power, gives -4 % .. +14 %; the table gave -50 % .. +24 %
    clock = FakeClock()
    gpu = SimulatedGpu("GPU-lock", "H100 (simulated)", TrainingTrace.phase_locked(0.1), SensorModel.h100())
    sensor = SimulatedSensor([gpu])
    integ = Integrator(sensor.devices(), host="h", clock=clock)
    sampler = Sampler([sensor], integ, clock=clock)
    run = ledger.start_run("lock")
    sink = LedgerSink(ledger, run.id)
    for k in range(1, 10):
        sampler.run_until(10.0 * k)
        integ.snapshot()  # a scrape runs lock detection, as the live agent's do
        sink.write(*integ.take_intervals())
        sink.write_revisions(integ.take_revisions())
    agent = integ.snapshot()[0]
    [total] = ledger.energy_totals(run.id)
    assert ledger.band_revisions(run.id)  # recorded, with reasons
    assert abs(total.figure.low_j - agent.low_j) <= 0.001 * agent.energy_j
    assert abs(total.figure.high_j - agent.high_j) <= 0.001 * agent.energy_j
    stored_low_j, _ = band_of_sum(ledger.energy_rows(run.id))
    assert agent.low_j - stored_low_j > 0.1 * agent.energy_j  # the rows as stored were far wider


def test_the_composed_sink_of_run_and_tracker_passes_revisions_to_the_ledger(ledger: Ledger) -> None:
    from wattlog.accounting.fleet.recording import CountingSink
    from wattlog.telemetry.sinks import RevisionSink

    run = ledger.start_run("composed")
    sink = CountingSink(
        LedgerSink(ledger, run.id)
    )  # what `wattlog run`, the Tracker and callbacks hand the agent
    assert isinstance(
        sink, RevisionSink
    )  # else the agent keeps revisions back and the table's band stays wide
    sink.write([_row(0.0)], [])
    sink.write_revisions(
        [BandRevision("h", "gpu0", 0.0, 10.0, "band revised: test", (100.0, -50.0, 0, 0, 0, 0))]
    )
    assert [r.reason for r in ledger.band_revisions(run.id)] == ["band revised: test"]
