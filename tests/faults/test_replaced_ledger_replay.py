"""Fault: the ledger replaced during a run, then `wattlog replay` into the ledger now at its URL.

The identity check turns the rest of the run into an outage: its rows are spooled under the
run's id in the old ledger. On 18aee5b replay stored them under that id in the new ledger:
into a stranger's run when the new ledger had one there, or, with none, the file was set
aside as "its run was deleted" and its rows never stored. Now the spool's header names the
run and the ledger's identity at the start: in another ledger the rows go to the run of that
name (created from the spool if absent), said in one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.cli import main


def _wattlog(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wattlog", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("stranger", [True, False], ids=["another-run-at-its-id", "empty-ledger"])
def test_a_spool_written_after_the_ledger_was_replaced_replays_into_the_new_one(
    tmp_path: Path, stranger: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, other = tmp_path / "l.db", tmp_path / "other.db"
    new = Ledger(make_engine(f"sqlite:///{other}"))
    if stranger:
        new.start_run("someone-else")  # id 1 there, as the measured run's is here
    new.engine.dispose()
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "300", "WATTLOG_SPOOL_DIR": str(tmp_path / "s")}
    swap = f"sleep 1; rm -f {path}-wal {path}-shm; mv {other} {path}; sleep 1.5"
    args = ["run", "--run", "d", "--db", f"sqlite:///{path}", "--flush-s", "0.2", "--lock-dir", str(tmp_path)]
    done = _wattlog(*args, "--", "sh", "-c", swap, env=env)
    assert done.returncode == 75 and "deleted or replaced during the run" in done.stderr, done.stderr

    monkeypatch.setenv("WATTLOG_SPOOL_DIR", str(tmp_path / "s"))
    code = main(["replay", "--db", f"sqlite:///{path}"])
    out = capsys.readouterr().out
    assert code == 0, out
    said = [line for line in out.splitlines() if "replaced during the run" in line]
    assert len(said) == 1 and "run d:" in said[0], out
    assert not list((tmp_path / "s").iterdir())  # stored and removed: nothing set aside, nothing left
    ledger = Ledger(make_engine(f"sqlite:///{path}"))
    run = ledger.get_run("d")
    assert sum(t.energy_j for t in ledger.energy_totals(run.id)) > 0 and run.status == "finished"
    if stranger:
        assert not ledger.energy_totals("someone-else")  # nothing of d in a stranger's run
    assert main(["replay", "--db", f"sqlite:///{path}"]) == 0
    assert "0 energy rows stored from 0 spool file(s)" in capsys.readouterr().out
