"""Fault: a run measured only by `wattlog node` agents that all ended normally.

On 38e5f82 such a run stayed ``running`` (no node ends a run), and once the leases ran
out the next `wattlog table` closed it ``lost`` and NOT VALID, with a gap on every device
(5 of 5 runs: 1, 2 and 3 nodes, `node -- CMD` and `--seconds`). Now the last node whose
agent ends cleanly ends the run ``finished``; a reaper that meets a run whose every joined
node ended (two last nodes ending at once, a node that never joined) ends it ``finished``
too, naming the nodes that never joined, and never ``lost``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.telemetry.fakes import ConstantSensor
from wattlog.accounting.fleet.node import NodeAgent, NodeOptions
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.lease import LostRun, reap_lost
from wattlog.accounting.ledger.node_lease import LostNode
from wattlog.clock import FakeClock
from wattlog.telemetry.agent import AgentConfig


def _node(tmp_path: Path, url: str, index: int, count: int) -> NodeAgent:
    host = f"n{index}"
    agent = AgentConfig(port=None, period_s=0.01, flush_s=0.05, host=host, lock_dir=tmp_path / host)
    environ = {
        "SLURM_JOB_ID": "51",
        "SLURM_NNODES": str(count),
        "SLURM_NODEID": str(index),
        "WATTLOG_SPOOL_DIR": str(tmp_path / "spool"),
    }
    options = NodeOptions(run="job", db=url, agent=agent, lease_s=0.05)
    return NodeAgent(options, environ, [ConstantSensor(f"GPU-{index}", 100.0)])


def _reap_later(url: str) -> tuple[list[LostNode], list[LostRun]]:
    """Reap as a reader an hour later would (every lease long expired)."""
    later = FakeClock(wall_offset_s=time.time() + 3600.0)
    return reap_lost(Ledger(make_engine(url), clock=later))


@pytest.mark.parametrize("count", [1, 2, 3])
def test_a_run_whose_every_node_agent_ended_is_finished_never_lost(tmp_path: Path, count: int) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    nodes = [_node(tmp_path, url, i, count) for i in range(count)]
    for node in nodes:
        node.start()
    for node in nodes:
        node.close()
    assert all(node.unwritten_rows == 0 for node in nodes)
    ledger = Ledger(make_engine(url))
    assert ledger.get_run("job").status == "finished"  # 38e5f82: running, then lost
    lost_nodes, lost_runs = _reap_later(url)
    assert lost_nodes == [] and lost_runs == []
    assert ledger.get_run("job").status == "finished"
    assert not [g for g in ledger.gaps("job") if g.reason.startswith("agent down")]  # no lost gap


def test_a_run_whose_joined_nodes_all_ended_is_finished_by_the_reaper_naming_the_missing_node(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    nodes = [_node(tmp_path, url, i, 3) for i in range(2)]  # node 3 of 3 never starts
    for node in nodes:
        node.start()
    for node in nodes:
        node.close()
    ledger = Ledger(make_engine(url))
    assert ledger.get_run("job").status == "running"  # node 3 may still join
    with caplog.at_level(logging.WARNING):
        _, lost_runs = _reap_later(url)
    assert lost_runs == [] and ledger.get_run("job").status == "finished"
    assert "node 3 of 3 (never joined)" in caplog.text


def test_wattlog_node_seconds_on_two_nodes_leaves_the_run_finished(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200", "WATTLOG_SPOOL_DIR": str(tmp_path / "s")}
    procs = []
    for index in range(2):
        job = {"SLURM_JOB_ID": "52", "SLURM_NNODES": "2", "SLURM_NODEID": str(index)}
        command = [sys.executable, "-m", "wattlog", "node", "--run", "job", "--db", url, "--seconds", "1"]
        command += ["--port", "-1", "--flush-s", "0.2", "--linger-s", "0", "--host", f"h{index}"]
        command += ["--lock-dir", str(tmp_path / f"lock{index}"), "--simulate", "1"]
        procs.append(subprocess.Popen(command, env={**env, **job}, stdout=subprocess.PIPE, text=True))
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
    assert Ledger(make_engine(url)).get_run("job").status == "finished"  # 38e5f82: running
    assert _reap_later(url)[1] == []
