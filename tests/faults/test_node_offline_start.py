"""Fault: the shared ledger unreachable when `wattlog node` starts.

On the old code the node exited 2 at once (its measurements, and a command it was to run,
never started). Now it starts like `wattlog run`: it measures into the spool under the run's
name (a ``start`` line registers the run), the first flush that reaches the ledger stores it
once (the run created if no other node did, this node's row in the job added), and a ledger
still down at the end is said, with exit 75 and a spool for `wattlog replay`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.test_ledger_unreachable_at_start import closed_port
from tests.telemetry.fakes import ConstantSensor
from wattlog.accounting.fleet.node import NodeAgent, NodeOptions
from wattlog.accounting.ledger import Ledger, describe_url, make_engine
from wattlog.accounting.ledger.jobs import job_nodes
from wattlog.accounting.ledger.spool import replay_folder
from wattlog.accounting.ledger.spool_lines import read_spool
from wattlog.errors import LedgerUnavailable
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sinks import INCOMPLETE_EXIT

ENV = {"SLURM_JOB_ID": "78", "SLURM_NNODES": "2", "SLURM_NODEID": "1"}


def _unreachable(*args: object, **kwargs: object) -> object:
    raise LedgerUnavailable("cannot reach ledger: too many clients already")


def test_a_node_started_while_the_ledger_was_unreachable_stores_its_run_once_when_it_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    Ledger(make_engine(url))  # the ledger exists; its connections are used up at the node's start
    agent = AgentConfig(port=None, period_s=0.01, flush_s=0.05, host="n1", lock_dir=tmp_path / "locks")
    environ = {**ENV, "WATTLOG_SPOOL_DIR": str(tmp_path / "spool")}
    node = NodeAgent(NodeOptions(run="job", db=url, agent=agent), environ, [ConstantSensor("GPU-x", 150.0)])
    monkeypatch.setattr("wattlog.accounting.fleet.node.join_run", _unreachable)
    node.start()  # old code: LedgerError raised here, nothing measured
    assert node.offline is not None and "unreachable" in node.describe()
    time.sleep(0.4)  # the ledger is back: the next flush replays the spooled start and rows
    node.close()
    assert node.agent is not None and node.agent.unwritten_rows == 0
    truth_j = sum(d.energy_j for d in node.agent.snapshot())
    ledger = Ledger(make_engine(url))
    stored_j = sum(t.energy_j for t in ledger.energy_totals("job"))
    assert truth_j > 0 and stored_j == pytest.approx(truth_j, rel=1e-9)
    nodes = job_nodes(ledger, "job")
    assert nodes.joined == ("n1",) and nodes.node_count == 2  # its row in the job, from its first flush
    again = replay_folder(ledger, tmp_path / "spool", describe_url(url))
    assert again.written == 0 and sum(t.energy_j for t in ledger.energy_totals("job")) == pytest.approx(
        truth_j
    )


def test_wattlog_node_with_the_ledger_down_to_the_end_measures_says_so_and_exits_75(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql+psycopg://wattlog:pw@127.0.0.1:{closed_port()}/ledger"
    marker = tmp_path / "trained"
    args = [
        "node", "--run", "offline", "--db", url, "--host", "n1", "--port", "-1", "--flush-s", "0.2",
        "--simulate", "1", "--linger-s", "0", "--lock-dir", str(tmp_path / "locks"),
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "wattlog", *args, "--", "sh", "-c", f"sleep 0.5; echo ran > {marker}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **ENV, "TMPDIR": str(tmp_path)},
    )
    assert marker.exists()  # old code: exit 2 before the command ran
    assert done.returncode == INCOMPLETE_EXIT, done.stderr
    assert "unreachable at start" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "`wattlog replay` stores them" in done.stdout, done.stdout
    spooled = [p for p in Path(os.environ["WATTLOG_SPOOL_DIR"]).glob("*.jsonl") if "offline" in p.name]
    [batch] = read_spool(spooled[0]).batches.values()
    assert batch.start is not None and batch.intervals  # replay creates the run and stores its rows
