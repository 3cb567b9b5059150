"""Fault: the ledger unreachable when a run starts; a damaged ledger.

On the old code, with the ledger's connections used up, 10 of 20
`wattlog run`s exited 2 and their training never ran. Now the command runs,
the run is measured into the spool under its name (a `start` line carries its
registration), `wattlog run` says so and exits 75 while anything is still
spooled; when the ledger is back the replay creates the run and stores it
once. On a damaged ledger the old `wattlog run` took the run, spooled its
rows to nowhere and exited 75 with several lines; now it is refused with one line.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.spool_lines import read_spool
from wattlog.errors import LedgerUnavailable
from wattlog.events import EventKind
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.estimate import EstimateSensor
from wattlog.trainer import session as session_module
from wattlog.trainer.session import RunSession, SessionConfig, Status


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_command_runs_and_the_run_is_spooled_when_the_ledger_is_down(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql+psycopg://wattlog:pw@127.0.0.1:{closed_port()}/ledger"
    marker = tmp_path / "trained"
    command = [sys.executable, "-m", "wattlog", "run", "--db", url, "--run", "offline", "--flush-s", "0.2"]
    done = subprocess.run(
        [*command, "--", "sh", "-c", f"echo ran > {marker}"], capture_output=True, text=True, timeout=120
    )
    assert marker.exists()  # old code: exit 2 before the command ran
    assert done.returncode == 75, done.stderr
    assert "unreachable at start" in done.stderr and "Traceback" not in done.stderr
    [spooled] = list(Path(os.environ["WATTLOG_SPOOL_DIR"]).glob("*.jsonl"))  # tests/conftest.py's folder
    content = read_spool(spooled)
    [batch] = content.batches.values()
    assert batch.start is not None and batch.end is not None and batch.end[0] == "finished"
    assert batch.intervals and not content.bad


def test_a_run_started_offline_is_stored_once_when_the_ledger_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    make_engine(url).dispose()
    real = session_module.make_engine

    def down_at_start(db: str | None = None, **kwargs):  # type: ignore[no-untyped-def]
        raise LedgerUnavailable("cannot open ledger: too many clients already")

    monkeypatch.setattr(session_module, "make_engine", down_at_start)
    agent = AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path / "locks")
    session = RunSession(SessionConfig("late", db=url, agent_config=agent), sensors=[EstimateSensor()])
    session.start()
    assert session.offline is not None and session.run_id is None
    assert session.recorder is not None
    session.recorder.event(EventKind.CHECKPOINT, step=3, payload={"path": "c.pt"})  # spooled by name
    monkeypatch.setattr(session_module, "make_engine", real)  # the ledger is back before the end
    summary = session.close(Status.FINISHED)
    assert summary.unwritten_rows == 0 and summary.measured_j is not None
    ledger = Ledger(make_engine(url))
    run = ledger.get_run("late")
    assert run.status == "finished" and run.end_s is not None and run.start_s < run.end_s
    stored = sum(t.energy_j for t in ledger.energy_totals(run.id))
    assert stored == pytest.approx(summary.measured_j, rel=1e-9)  # every joule, once
    assert [(e.kind, e.step) for e in ledger.events(run.id)] == [("checkpoint", 3)]


def test_a_damaged_ledger_is_refused_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = Ledger(make_engine(f"sqlite:///{db}"))
    ledger.start_run("old")
    ledger.engine.dispose()
    with sqlite3.connect(db) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        [root] = connection.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'ix_energy_run_hour_end'"
        )
    data = bytearray(db.read_bytes())
    data[(root[0] - 1) * 4096 : (root[0] - 1) * 4096 + 8] = b"\xff" * 8  # an index page the run start skips
    db.write_bytes(bytes(data))
    marker = tmp_path / "trained"
    command = [sys.executable, "-m", "wattlog", "run", "--db", f"sqlite:///{db}", "--run", "new", "--"]
    done = subprocess.run([*command, "touch", str(marker)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "is damaged" in done.stderr  # old code: 75 and four lines
    assert len(done.stderr.strip().splitlines()) == 1 and not marker.exists()
