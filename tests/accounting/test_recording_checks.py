"""A node's recording (`wattlog node`, `wattlog run`) stores each counter's start-up check, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.waiting import wait_until
from wattlog.accounting.fleet.recording import LedgerTarget, Recording, RecordingConfig
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.clock import FakeClock
from wattlog.events import EventKind
from wattlog.records import Kind, Source
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.types import DeviceInfo, Reading


def test_closing_a_recording_stores_one_counter_check_per_counter_device(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("node-run", RunSpec(site="jupiter"))
    agent = AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path, host="n7", linger_s=0)
    config = RecordingConfig(agent, spool_dir=tmp_path / "spool")
    recording = Recording(config, LedgerTarget(ledger, run.id), sensors=[SimulatedSensor(simulated_gpus(2))])
    with recording:
        assert recording.agent is not None
        agent = recording.agent  # checked after three counter values (~0.3 s): waited for

        def checked() -> bool:
            return all(d.counter_check is not None for d in agent.snapshot())

        wait_until(checked, 30.0, "the simulated counters were never checked")
    recording.close()  # a second close stores nothing more
    checks = [e.payload for e in ledger.events(run.id) if e.kind == EventKind.COUNTER_CHECK]
    assert sorted(c["device"] for c in checks) == ["GPU-sim-0000", "GPU-sim-0001"]
    assert {c["host"] for c in checks} == {"n7"} and all(c["power_j"] >= 0 for c in checks)
    assert not any(c["swapped"] for c in checks), checks  # sound counters stay counters


class _Agent:
    """What `record_counter_checks` reads of an agent: its host and its devices' snapshot."""

    def __init__(self, integrator: Integrator) -> None:
        self.config = AgentConfig(port=None, host="n7")
        self.snapshot = integrator.snapshot


def test_a_counter_swapped_for_power_x_time_at_start_up_is_recorded_as_swapped(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("node-run", RunSpec(site="jupiter"))
    clock = FakeClock()
    gpu = DeviceInfo("g0", "g0", Kind.GPU, Source.COUNTER, True, power_limit_w=700.0)
    integrator = Integrator([gpu], host="n7", clock=clock)
    for k in range(40):  # 1 s at 300 W, the counter counting 20x that
        integrator.add(Reading("g0", k * 0.025, energy_mj=20 * 300.0 * k * 25.0, power_w=300.0))
    clock.advance(1.0)
    integrator.take_intervals()
    recording = Recording(RecordingConfig(AgentConfig(port=None)), LedgerTarget(ledger, run.id))
    recording.agent = _Agent(integrator)  # type: ignore[assignment]
    recording.record_counter_checks()
    [check] = [e.payload for e in ledger.events(run.id) if e.kind == EventKind.COUNTER_CHECK]
    assert check["swapped"] is True and check["counter_j"] == pytest.approx(20 * check["power_j"])
