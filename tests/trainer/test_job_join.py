"""A training job whose node agents (`wattlog node`) created the run first: the tracker joins it."""

from __future__ import annotations

from pathlib import Path

from wattlog.accounting.fleet.node import NodeAgent, NodeOptions
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.jobs import job_nodes
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.tracker import Tracker

ENV = {"SLURM_JOB_ID": "4242", "SLURM_NNODES": "1", "SLURM_NODEID": "0"}


def _config(tmp_path: Path) -> AgentConfig:
    return AgentConfig(port=None, period_s=0.01, flush_s=0.05, host="n0", lock_dir=tmp_path / "locks")


def test_the_tracker_joins_the_run_its_own_jobs_node_agent_created(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/ledger.db"
    node = NodeAgent(
        NodeOptions(run="job", db=db, agent=_config(tmp_path)), ENV, [SimulatedSensor(simulated_gpus(1))]
    )
    node.start()
    try:
        with Tracker("job", db=db, agent=False, environ=ENV, agent_config=_config(tmp_path)) as tracker:
            for _ in range(3):
                tracker.step(tokens=10)
    finally:
        node.close()
    ledger = Ledger(make_engine(db))
    run = ledger.get_run("job")
    assert (run.status, run.restarts) == ("finished", 0)  # joined, not a restart
    assert job_nodes(ledger, "job").measuring == ("n0",)  # the tracker (no agent) did not unset it
    assert {t.host for t in ledger.energy_totals("job")} == {"n0"}
    with Tracker("job", db=db, agent=False, environ={"SLURM_JOB_ID": "999"}) as other:
        assert other.run == "job-2"  # another job may not take the name: a new attempt of its own
    assert ledger.get_run("job").restarts == 0
