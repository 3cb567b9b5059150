"""Two ranks on one node (gloo on CPU): one agent measures the node, its energy is counted once."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.estimate import CPU_UUID, DRAM_UUID, EstimateSensor
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.tracker import Tracker


def _worker(rank: int, folder: str, every_rank_tries: bool) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")
    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=2)
    try:
        tracker = Tracker(
            "ddp",
            db=f"sqlite:///{folder}/ledger.db",
            log_every=5,
            agent=True if every_rank_tries else None,
            sensors=[EstimateSensor(), SimulatedSensor(simulated_gpus(2, t0_s=0.0))],
            agent_config=AgentConfig(
                port=0, flush_s=0.1, host=f"node-r{rank}", lock_dir=Path(folder) / "locks"
            ),
        )
        if rank == 0:
            tracker.start()
        dist.barrier()  # rank 0 has registered the run and locked the devices
        if rank != 0:
            tracker.start()
        with tracker:
            for step in range(1, 21):
                loss = torch.tensor(float(step))
                dist.all_reduce(loss)  # what DDP does every step
                bad = rank == 1 and step == 12
                tracker.step(loss=torch.tensor(float("nan")) if bad else loss / 2, tokens=torch.tensor(100))
                time.sleep(0.01)
            dist.barrier()
    finally:
        dist.destroy_process_group()


def _run(tmp_path: Path, every_rank_tries: bool) -> Ledger:
    mp.spawn(_worker, args=(str(tmp_path), every_rank_tries), nprocs=2, join=True)
    return Ledger(make_engine(f"sqlite:///{tmp_path}/ledger.db"))


def _check_counted_once(ledger: Ledger, node_devices: set[str]) -> None:
    totals = ledger.energy_totals("ddp")
    counted = [t.device for t in totals if t.device in node_devices]
    assert sorted(counted) == sorted(node_devices), totals  # each node device once, by one agent
    assert {t.host for t in totals if t.device in node_devices} == {"node-r0"}
    assert all(t.energy_j > 0 for t in totals)
    run = ledger.get_run("ddp")
    assert run.status == "finished" and run.restarts == 0


@pytest.mark.timeout(120)
def test_two_ranks_one_agent_node_energy_counted_once(tmp_path: Path) -> None:
    ledger = _run(tmp_path, every_rank_tries=False)
    _check_counted_once(ledger, {CPU_UUID, DRAM_UUID, "GPU-sim-0000", "GPU-sim-0001"})
    assert {t.host for t in ledger.energy_totals("ddp")} == {"node-r0"}  # rank 1 ran no agent
    events = ledger.events("ddp")
    nan = [e for e in events if e.kind == "non_finite"]
    assert len(nan) == 1 and nan[0].payload["rank"] == 1 and nan[0].step == 12  # rank 1 reports too
    assert max(e.step for e in events if e.kind == "progress") == 20


@pytest.mark.timeout(120)
def test_when_every_rank_starts_an_agent_the_device_locks_still_count_once(tmp_path: Path) -> None:
    # Shared devices (here the CPU and DRAM) are locked by rank 0's agent; simulated GPUs live
    # inside each process, so each rank's own simulated GPUs are its own devices.
    _check_counted_once(_run(tmp_path, every_rank_tries=True), {CPU_UUID, DRAM_UUID})
