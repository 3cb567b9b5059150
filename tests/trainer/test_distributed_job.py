"""Two nodes x two ranks (gloo on CPU): the job's tokens per joule counts every rank's tokens.

Before, each rank divided its own tokens by its node's energy: with two ranks per
node the figure came out half the job's. Now every rank reports its tokens into the
ledger and rank 0 records the job's figure (wattlog.accounting.publishing.job_speed).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.jobs import job_nodes
from wattlog.accounting.publishing.job_speed import job_speed
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.trainer.tracker import Tracker

NODES, RANKS_PER_NODE, STEPS, TOKENS = 2, 2, 60, 100
WORLD = NODES * RANKS_PER_NODE


def _worker(rank: int, folder: str, sample_nodes: str) -> None:
    node = rank // RANKS_PER_NODE
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank % RANKS_PER_NODE),
        WORLD_SIZE=str(WORLD),
        LOCAL_WORLD_SIZE=str(RANKS_PER_NODE),
        GROUP_RANK=str(node),
        MASTER_ADDR="node-0",
        WATTLOG_SAMPLE_NODES=sample_nodes,
    )
    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=WORLD)
    try:
        gpus = simulated_gpus(2, lambda i: ConstantTrace(300.0), t0_s=time.monotonic())
        tracker = Tracker(
            "job",
            db=f"sqlite:///{folder}/ledger.db",
            site="jupiter",
            log_every=5,
            progress_every_s=0.05,
            sensors=[SimulatedSensor(gpus)],
            agent_config=AgentConfig(
                port=0,
                period_s=0.01,
                flush_s=0.1,
                host=f"node-{node}",
                lock_dir=Path(folder) / f"locks-{node}",
            ),
        )
        if rank == 0:
            tracker.start()
        dist.barrier()  # rank 0 has registered the run
        if rank != 0:
            tracker.start()
        dist.barrier()
        with tracker:
            for _ in range(STEPS):
                loss = torch.tensor(1.0)
                dist.all_reduce(loss)
                tracker.step(loss=loss, tokens=torch.tensor(TOKENS))
                time.sleep(0.02)
            dist.barrier()
    finally:
        dist.destroy_process_group()


def _run(tmp_path: Path, sample_nodes: str = "") -> Ledger:
    mp.spawn(_worker, args=(str(tmp_path), sample_nodes), nprocs=WORLD, join=True)
    return Ledger(make_engine(f"sqlite:///{tmp_path}/ledger.db"))


@pytest.mark.timeout(180)
def test_two_nodes_two_ranks_tokens_per_joule_is_the_whole_job(tmp_path: Path) -> None:
    ledger = _run(tmp_path)
    job = job_speed(ledger, "job")
    assert job is not None and job.ranks == WORLD
    assert job.tokens == WORLD * STEPS * TOKENS  # every rank's tokens, counted once
    totals = ledger.energy_totals("job")
    energy_j = sum(t.energy_j for t in totals)
    assert {t.host for t in totals} == {"node-0", "node-1"}  # one agent per node, both nodes
    assert job.energy_j == pytest.approx(energy_j)
    assert job.tokens_per_j == pytest.approx(job.tokens / energy_j)
    # What one rank sees of its node: a quarter of the tokens over half the energy, half the job's figure.
    rank0_tokens = STEPS * TOKENS
    node0_j = sum(t.energy_j for t in totals if t.host == "node-0")
    assert rank0_tokens / node0_j == pytest.approx(job.tokens_per_j / 2, rel=0.3)
    # Rank 0's last progress record carries the job's figure, not its own (it was half before).
    last = [e for e in ledger.events("job") if e.kind == "progress"][-1]
    assert last.payload["job_ranks"] == WORLD
    assert last.payload["tokens_per_j"] == pytest.approx(job.tokens_per_j, rel=0.25)
    nodes = job_nodes(ledger, "job")
    assert nodes.node_count == 2 and set(nodes.measuring) == {"node-0", "node-1"}


@pytest.mark.timeout(180)
def test_one_of_two_nodes_sampled_the_other_only_reports_steps(tmp_path: Path) -> None:
    ledger = _run(tmp_path, sample_nodes="1")
    totals = ledger.energy_totals("job")
    assert {t.host for t in totals} == {"node-0"}  # node-1 started no agent
    nodes = job_nodes(ledger, "job")
    assert nodes.joined == ("node-0", "node-1") and nodes.measuring == ("node-0",)
    row = run_row(ledger, ledger.get_run("job"), TableOptions(catalog=site_catalog(None)))
    assert row.energy_source == "extrapolated+simulated"
    assert "1 of 2 nodes measured" in row.notes
    job = job_speed(ledger, "job")
    assert job is not None and job.tokens == WORLD * STEPS * TOKENS
    assert job.energy_j == pytest.approx(2 * sum(t.energy_j for t in totals))  # node-0's energy x 2
