"""Fault: one host name reported by two machines, or by two agents of one machine.

On the old code the same `--host` on two nodes (or two jobs on one node with different TMPDIR,
so different lock folders) landed two machines' energy under one node, shown as "1 of 1",
with no warning. Now each node's lease is held beside its machine id and its agent: a second
live holder is said once, as a ``host_collision`` event and a table note ("host X reported by
two machines"), however often both flush.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.telemetry.fakes import ConstantSensor
from wattlog.accounting.fleet.node import NodeAgent, NodeOptions
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.cli import main
from wattlog.events import EventKind
from wattlog.telemetry.agent import AgentConfig


def _two_agents(tmp_path: Path, url: str, machines: tuple[str | None, str | None]) -> None:
    """Two node agents under the host name gpu01, each with its own lock folder, flushing together."""
    nodes = []
    for index, machine in enumerate(machines):
        agent = AgentConfig(
            port=None, period_s=0.01, flush_s=0.05, host="gpu01", lock_dir=tmp_path / f"tmp{index}"
        )
        environ = {"SLURM_JOB_ID": "5", "SLURM_NNODES": "2", "SLURM_NODEID": str(index)}
        options = NodeOptions(run="job", db=url, site="jupiter", agent=agent, machine_id=machine)
        nodes.append(NodeAgent(options, environ, [ConstantSensor(f"GPU-{index}", 100.0)]).start())
    time.sleep(0.5)
    for node in nodes:
        node.close()


def _collisions(url: str) -> list[dict[str, object]]:
    return [
        dict(e.payload) for e in Ledger(make_engine(url)).events("job") if e.kind == EventKind.HOST_COLLISION
    ]


def test_one_host_name_on_two_machines_is_said_once_in_the_ledger_and_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _two_agents(tmp_path, url, ("machine-a", "machine-b"))
    assert _collisions(url) == [{"host": "gpu01", "machines": ["machine-a", "machine-b"]}]  # old code: none
    assert main(["table", "job", "--db", url, "--format", "markdown"]) == 0
    table = capsys.readouterr().out
    assert "host gpu01 reported by two machines (machine-a and machine-b)" in table, table


def test_two_jobs_on_one_machine_with_different_tmpdirs_are_told_apart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _two_agents(tmp_path, url, (None, None))  # this machine's own id, two agents of it
    [collision] = _collisions(url)
    assert collision["host"] == "gpu01" and len(collision["machines"]) == 1  # type: ignore[arg-type]
