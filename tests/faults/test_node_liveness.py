"""Fault: nodes of a live multi-node run killed with -9, one restarted.

On the old code (64 nodes x 8 GPUs, four agents killed -9 mid-run, two restarted) the ledger had
no gap rows, no events and `restarts = 0`; the table said "64 of 64 nodes measured" and nothing
else, though the dead nodes' energy after their last flush was never measured. The run's lease
could not help: the other nodes kept renewing it. Now each node holds its own lease: a node
silent past it is marked lost by the next reader or `wattlog runs reap` (a gap on that node from
its last row), a new agent on it is a restart (the gap ends there, `restarts` counts it), and
the table names the nodes with gaps. Three simulated nodes as real processes, about 15 s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import wattlog_session
from tests.waiting import wait_until
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.node_lease import NODE_LOST_REASON
from wattlog.cli import main
from wattlog.events import EventKind


@contextlib.contextmanager
def node(
    url: str, host: str, index: int, tmp_path: Path, seconds: float = 600.0
) -> Iterator[subprocess.Popen[str]]:
    """`wattlog node` for node `index` of a 3-node SLURM job, in its own session (killed after)."""
    env = {
        **os.environ,
        "SLURM_JOB_ID": "9",
        "SLURM_NNODES": "3",
        "SLURM_NODEID": str(index),
        "TMPDIR": str(tmp_path),
        "PYTHONUNBUFFERED": "1",
    }
    args = [
        "node", "--run", "job", "--db", url, "--host", host, "--site", "jupiter", "--port", "-1",
        "--flush-s", "0.2", "--lease-s", "2.5", "--simulate", "1", "--linger-s", "0",
        "--seconds", str(seconds), "--lock-dir", str(tmp_path / f"locks-{host}"),
    ]  # fmt: skip
    with wattlog_session(args, tmp_path, env) as process:
        yield process


def _hosts_stored(url: str) -> set[str]:
    try:
        return {t.host for t in Ledger(make_engine(url)).energy_totals("job")}
    except Exception:  # the first node has not created the ledger yet
        return set()


def _wait_for_rows(url: str, hosts: set[str], process: subprocess.Popen[str]) -> None:
    def stored() -> bool:
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        return hosts <= _hosts_stored(url)

    wait_until(stored, 60, lambda: f"no rows from {hosts - _hosts_stored(url)}", 0.2)


def test_killed_nodes_of_a_live_run_are_gaps_on_them_and_a_restart_is_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    with (
        node(url, "n1", 0, tmp_path) as n1,
        node(url, "n2", 1, tmp_path) as n2,
        node(url, "n3", 2, tmp_path) as n3,
    ):
        _wait_for_rows(url, {"n1", "n2", "n3"}, n1)
        for dead in (n2, n3):
            os.killpg(dead.pid, signal.SIGKILL)
            dead.wait(timeout=10)
        # past the dead nodes' leases (2.5 s after their last flush); n1 renews every 0.2 s, so a stall
        # of a loaded machine up to 2.5 s does not lose it
        time.sleep(3.2)
        assert main(["runs", "reap", "--db", url]) == 0
        reaped = capsys.readouterr().out
        assert "node 'n2' of run 'job' lost" in reaped and "node 'n3' of run 'job' lost" in reaped, reaped
        assert "0 run(s) closed as lost, 2 node(s) marked lost" in reaped  # the run lives on n1
        with node(url, "n3", 2, tmp_path, seconds=0.5) as again:
            assert again.wait(timeout=60) == 0, again.stdout.read() if again.stdout else ""
        assert n1.poll() is None
        os.killpg(n1.pid, signal.SIGTERM)  # n1 ends cleanly (its lease released: no gap)
        n1.wait(timeout=30)
    ledger = Ledger(make_engine(url))
    ledger.end_run("job")  # the job's end (the scheduler's epilog)

    run = ledger.get_run("job")
    assert run.restarts == 1  # old code: 0
    gaps = {g.host: g for g in ledger.gaps("job") if g.reason == NODE_LOST_REASON}
    assert set(gaps) == {"n2", "n3"}  # old code: no gap rows
    assert gaps["n2"].end_s == pytest.approx(run.end_s)  # n2 never came back: to the run's end
    restart_s = next(e.time_s for e in ledger.events("job") if e.kind == EventKind.RESTART)
    assert gaps["n3"].end_s == pytest.approx(restart_s) and gaps["n3"].start_s < restart_s
    lost = [e.payload["host"] for e in ledger.events("job") if e.kind == EventKind.NODE_LOST]
    assert sorted(lost) == ["n2", "n3"]
    assert main(["table", "job", "--db", url, "--format", "markdown"]) == 0
    table = capsys.readouterr().out
    assert "1 of 3 nodes measured throughout; n" in table, table  # old code: "3 of 3 nodes measured"
    assert ", not back" in table and ", restarted" in table, table
    spans = {host: f"{gap.end_s - gap.start_s:.1f} s" for host, gap in gaps.items()}
    print(f"\nnode gaps {spans}")
