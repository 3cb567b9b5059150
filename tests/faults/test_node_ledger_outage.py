"""Fault: the shared ledger is unreachable for the whole of a `wattlog node` run.

On the old code `wattlog node` wrote to the ledger without a spool: the rows
kept for retry died with the process (PostgreSQL down to the end of a run lost
68.7 % of the energy). Now it records through the same composition root as
`wattlog run`: the rows are spooled, replayable exactly once, and the command
says so and exits non-zero.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.telemetry.fakes import ConstantSensor
from tests.waiting import wait_until
from wattlog.accounting.fleet.node import NodeAgent, NodeOptions
from wattlog.accounting.fleet.slurm_hooks import SlurmHooks, serve_agent
from wattlog.accounting.ledger import Ledger, describe_url, make_engine
from wattlog.accounting.ledger.spool import replay_folder
from wattlog.cli import main
from wattlog.errors import LedgerError, RunNotFound
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sinks import INCOMPLETE_EXIT

ENV = {"SLURM_JOB_ID": "77", "SLURM_NNODES": "1", "SLURM_NODEID": "0"}


def _down(*args: object, **kwargs: object) -> int:
    raise LedgerError("could not record rows, nothing was written: connection refused")


def _node_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    """A ledger URL and a 0.4 s `wattlog node` of one simulated GPU writing to it, spooling under tmp_path."""
    url = f"sqlite:///{tmp_path / 'l.db'}"
    monkeypatch.setenv("WATTLOG_SPOOL_DIR", str(tmp_path / "spool"))
    args = [
        "node", "--run", "job", "--db", url, "--host", "n1", "--port", "-1", "--seconds", "0.4",
        "--flush-s", "0.1", "--simulate", "1", "--linger-s", "0", "--lock-dir", str(tmp_path / "locks"),
    ]  # fmt: skip
    return url, args


def _total_j(url: str, run: str) -> float:
    return sum(t.energy_j for t in Ledger(make_engine(url)).energy_totals(run))


def _stored_j(url: str, run: str) -> float:
    """The run's stored energy, 0 while it does not exist yet."""
    try:
        return _total_j(url, run)
    except RunNotFound:
        return 0.0


def _stored_s(url: str, run: str) -> float:
    """How many seconds the run's stored rows span, 0 while it has none."""
    try:
        rows = Ledger(make_engine(url)).energy_rows(run)
    except RunNotFound:
        return 0.0
    return max((r.end_s for r in rows), default=0.0) - min((r.start_s for r in rows), default=0.0)


def test_a_node_spools_every_row_of_a_ledger_outage_and_a_replay_stores_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    agent = AgentConfig(port=None, period_s=0.01, flush_s=0.05, host="n0", lock_dir=tmp_path / "locks")
    environ = {**ENV, "WATTLOG_SPOOL_DIR": str(tmp_path / "spool")}
    node = NodeAgent(NodeOptions(run="job", db=url, agent=agent), environ, [ConstantSensor("GPU-x", 150.0)])
    with monkeypatch.context() as outage:
        outage.setattr("wattlog.accounting.ledger.store.Ledger.record_intervals", _down)
        node.start()
        time.sleep(0.4)
        node.close()
    assert node.agent is not None
    truth_j = sum(d.energy_j for d in node.agent.snapshot())
    unwritten = node.agent.unwritten_rows
    assert truth_j > 0 and unwritten > 0
    assert _total_j(url, "job") == 0.0  # nothing reached the ledger during the outage

    replayed = replay_folder(Ledger(make_engine(url)), tmp_path / "spool", describe_url(url))
    again = replay_folder(Ledger(make_engine(url)), tmp_path / "spool", describe_url(url))
    assert replayed.files == 1 and replayed.written == unwritten
    assert _total_j(url, "job") == pytest.approx(truth_j, rel=1e-9)  # nothing lost
    assert again.files == 0 and _total_j(url, "job") == pytest.approx(truth_j, rel=1e-9)  # exactly once


def test_wattlog_node_in_an_outage_says_so_exits_incomplete_and_leaves_a_replayable_spool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url, args = _node_command(tmp_path, monkeypatch)
    with monkeypatch.context() as outage:
        outage.setattr("wattlog.accounting.ledger.store.Ledger.record_intervals", _down)
        assert main(args) == INCOMPLETE_EXIT
    captured = capsys.readouterr()
    assert "incomplete" in captured.err and "`wattlog replay` stores them" in captured.out
    assert len(list((tmp_path / "spool").glob("*.jsonl"))) == 1
    assert main(["replay", "--db", url, "--spool-dir", str(tmp_path / "spool")]) == 0
    assert _total_j(url, "job") > 0 and not list((tmp_path / "spool").glob("*.jsonl"))


def test_wattlog_node_whose_counter_checks_went_to_the_spool_exits_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url, args = _node_command(tmp_path, monkeypatch)
    with (
        monkeypatch.context() as outage
    ):  # the ledger fails after the last rows: the close's event is spooled
        outage.setattr("wattlog.accounting.ledger.store.Ledger.record_event", _down)
        assert main(args) == INCOMPLETE_EXIT  # was 0: every row stored, the gate's evidence not
    assert "wattlog node: run job is incomplete: 1 event waiting in the spool" in capsys.readouterr().err
    assert _total_j(url, "job") > 0 and not Ledger(make_engine(url)).events("job")
    assert main(["replay", "--db", url, "--spool-dir", str(tmp_path / "spool")]) == 0
    assert [e.kind for e in Ledger(make_engine(url)).events("job")] == ["counter_check"]


def test_a_slurm_agent_whose_counter_checks_went_to_the_spool_fails_the_prolog_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hooks = SlurmHooks(db=f"sqlite:///{tmp_path / 'l.db'}", state_dir=tmp_path / "state", flush_s=0.1)
    hooks.port, hooks.simulate = -1, 1
    environ = {**ENV, "SLURMD_NODENAME": "n1", "WATTLOG_SPOOL_DIR": str(tmp_path / "spool")}
    stop = threading.Event()

    def stop_once_rows_are_stored() -> None:
        # the agent's close records its counter check: stop only once it has measured and flushed
        # (a fixed 0.4 s stopped a slow fresh clone's agent before its first flush)
        # (its counter check needs a few of the counter's updates, ~100 ms each: 1 s of rows has them)
        wait_until(
            lambda: _stored_s(hooks.db, hooks.run_name("77")) >= 1.0,
            60.0,
            "the SLURM agent stored no second of rows in 60 s",
        )
        stop.set()

    stopper = threading.Thread(target=stop_once_rows_are_stored, daemon=True)
    stopper.start()
    with monkeypatch.context() as outage:
        outage.setattr("wattlog.accounting.ledger.store.Ledger.record_event", _down)
        code = serve_agent(hooks, environ, stop, lambda args: subprocess.CompletedProcess(args, 0, "", ""))
    stopper.join(timeout=60.0)
    assert code == 1  # was 0
    assert (
        f"wattlog slurm agent: run {hooks.run_name('77')} is incomplete: 1 event waiting"
        in capsys.readouterr().out
    )
