"""A node's recording (`wattlog node`, `wattlog run`) stores each counter's start-up check, once."""

from __future__ import annotations

import time
from pathlib import Path

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.recording import LedgerTarget, Recording, RecordingConfig
from wattlog.events import EventKind
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus


def test_closing_a_recording_stores_one_counter_check_per_counter_device(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("node-run", RunSpec(site="jupiter"))
    agent = AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path, host="n7", linger_s=0)
    config = RecordingConfig(agent, spool_dir=tmp_path / "spool")
    recording = Recording(config, LedgerTarget(ledger, run.id), sensors=[SimulatedSensor(simulated_gpus(2))])
    with recording:
        time.sleep(0.2)  # a few flushes: the first interval is the check
    recording.close()  # a second close stores nothing more
    checks = [e.payload for e in ledger.events(run.id) if e.kind == EventKind.COUNTER_CHECK]
    assert sorted(c["device"] for c in checks) == ["GPU-sim-0000", "GPU-sim-0001"]
    assert {c["host"] for c in checks} == {"n7"} and all(c["power_j"] >= 0 for c in checks)
