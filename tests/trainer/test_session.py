"""The run session without torch: `wattlog run` in a venv where torch cannot be imported."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.waiting import wait_until
from wattlog.accounting.ledger import Ledger, Status, make_engine
from wattlog.errors import ConfigError, LedgerError
from wattlog.events import EventKind
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.session import RunSession, SessionConfig

NO_TORCH = "import sys\nsys.modules['torch'] = None  # `import torch` raises ImportError, as without torch\n"


def test_wattlog_run_works_without_torch(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(NO_TORCH)
    env = {**os.environ, "PYTHONPATH": str(shim), "TMPDIR": str(tmp_path)}
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "torch" in probe.stderr  # the shim hides torch
    db = f"sqlite:///{tmp_path / 'l.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "wattlog", "run", "--run", "x", "--db", db, "--", "true"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr and "Run x finished (exit code 0)" in done.stdout
    assert Ledger(make_engine(db)).get_run("x").status == "finished"


def counter_checked(session: RunSession, timeout_s: float = 30.0) -> None:
    """Wait until the agent has checked its counter at start-up (after three counter values, ~0.3 s)."""
    agent = session.agent
    assert agent is not None

    def checked() -> bool:
        return all(d.counter_check is not None for d in agent.snapshot())

    wait_until(checked, timeout_s, "the simulated counter was never checked")


def test_a_session_records_every_joule_its_agent_measured(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    config = SessionConfig(
        "s", site="jupiter", db=db, agent_config=AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path)
    )
    session = RunSession(config, sensors=[SimulatedSensor(simulated_gpus(1))]).start()
    assert session.run_id is not None and session.metrics_url is None
    counter_checked(session)
    summary = session.close(Status.PREEMPTED)
    stored = sum(t.energy_j for t in Ledger(make_engine(db)).energy_totals("s"))
    assert summary.complete and summary.measured_j == pytest.approx(stored) and summary.recorded_j == stored
    assert summary.source == "simulated" and summary.low_j <= summary.measured_j <= summary.high_j
    assert "source simulated, band" in summary.line()  # every figure names its source and band
    assert Ledger(make_engine(db)).get_run("s").status == "preempted"
    assert session.close(Status.FINISHED).measured_j is None  # a second close does nothing
    # the validity gate's start-up check of the simulated GPU's counter, recorded at close
    [check] = [e for e in Ledger(make_engine(db)).events("s") if e.kind == EventKind.COUNTER_CHECK]
    assert check.payload["host"] == config.agent_settings.host and check.payload["power_j"] > 0


def test_a_session_whose_rows_went_to_the_spool_says_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    config = SessionConfig("s", db=db, agent_config=AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path))
    session = RunSession(config, sensors=[SimulatedSensor(simulated_gpus(1))]).start()

    def down(*args: object, **kwargs: object) -> int:
        raise LedgerError("could not record rows, nothing was written: connection refused")

    monkeypatch.setattr(Ledger, "record_intervals", down)  # down to the end: the rows are spooled
    time.sleep(0.3)  # a few flushes of measured energy
    summary = session.close(Status.FINISHED)
    assert summary.unwritten_rows > 0 and session.unwritten_rows == summary.unwritten_rows
    assert not summary.complete and summary.measured_j is not None and summary.recorded_j < summary.measured_j
    assert "INCOMPLETE" in summary.line() and "wattlog replay" in summary.line()


def test_a_session_whose_end_and_events_went_to_the_spool_says_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    config = SessionConfig("s", db=db, agent_config=AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path))
    session = RunSession(config, sensors=[SimulatedSensor(simulated_gpus(1))]).start()
    counter_checked(session)

    def down(*args: object, **kwargs: object) -> None:
        raise LedgerError("could not write, nothing was written: connection refused")

    # the ledger goes down after the last rows: the counter check and the run's end are spooled
    with monkeypatch.context() as outage:
        outage.setattr(Ledger, "record_event", down)
        outage.setattr(Ledger, "end_run", down)
        summary = session.close(Status.FINISHED)
    assert summary.unwritten_rows == 0 and summary.spooled_lines >= 2  # every row stored, not the rest
    assert not summary.complete and "INCOMPLETE" in summary.line() and "wattlog replay" in summary.line()
    ledger = Ledger(make_engine(db))
    assert ledger.get_run("s").status == "running"  # what the exit must not pass off as finished
    spool = session.recording.spool if session.recording is not None else None
    assert spool is not None
    spool.replay(ledger)  # `wattlog replay`'s work, once the ledger is back
    assert ledger.get_run("s").status == "finished"
    assert [e.kind for e in ledger.events("s")].count(EventKind.COUNTER_CHECK) == 1


def test_session_config_is_validated_once_and_reads_the_environment() -> None:
    config = SessionConfig.from_env(environ={"WATTLOG_RUN_ID": "job-7", "RANK": "3", "LOCAL_RANK": "1"})
    assert (config.run, config.resume, config.rank, config.local_rank) == ("job-7", True, 3, 1)
    assert not config.owns_agent
    with pytest.raises(ConfigError, match="run name"):
        SessionConfig.from_env(environ={})
    with pytest.raises(ConfigError, match=r"\$RANK must be an integer"):
        SessionConfig.from_env("x", environ={"RANK": "zero"})
    with pytest.raises(ConfigError, match="join_timeout_s"):
        SessionConfig("x", join_timeout_s=-1)
