"""Fault: `wattlog runs delete` of a run still being written.

On 38e5f82 the run was deleted at once, its writer went on spooling every flush (the ledger
refused rows of a run that is gone), and the spool it left failed `wattlog replay` (exit 2)
on every try. Now a live run (its lease held) is refused in one line unless --force; forced,
the writer's later rows are refused in one line, its spool is dropped with a note, the run
ends incomplete (exit 75), and a spool of a deleted run left by a dead writer is set aside.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.cli import main
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.sinks import INCOMPLETE_EXIT


def test_a_live_run_is_deleted_only_when_forced_and_its_writer_then_stops_spooling(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "300", "WATTLOG_SPOOL_DIR": str(tmp_path / "s")}
    wattlog = f"{sys.executable} -m wattlog"
    script = (
        f"sleep 1.5; {wattlog} runs delete e --yes --db {db}; echo refused=$?; "
        f"{wattlog} runs delete e --yes --force --db {db}; sleep 1"
    )
    args = ["run", "--run", "e", "--db", db, "--flush-s", "0.2", "--lock-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "wattlog", *args, "--", "sh", "-c", script],
        capture_output=True, text=True, env=env, timeout=180, check=False,
    )  # fmt: skip
    assert "refused=2" in done.stdout, done.stdout  # 38e5f82: refused=0, the live run deleted
    refusal = [line for line in done.stderr.splitlines() if "is being written" in line]
    assert len(refusal) == 1 and "--force" in refusal[0]
    assert "run e deleted" in done.stdout
    assert done.returncode == INCOMPLETE_EXIT, done.stderr
    deleted = [line for line in done.stderr.splitlines() if "was deleted from the ledger" in line]
    assert len(deleted) == 2, done.stderr  # the writer's one line, and the run's verdict
    assert not list((tmp_path / "s").glob("*.jsonl*")), "a spool of a deleted run was left"
    assert main(["replay", "--db", db, "--spool-dir", str(tmp_path / "s")]) == 0


def test_a_spool_of_a_deleted_run_left_by_a_dead_writer_is_set_aside(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("gone").id
    spool = Spool(tmp_path / "s", str(tmp_path / "l.db"), run)
    row = EnergyInterval.of("n", "GPU-0", Kind.GPU, Source.SIMULATED, 0.0, 1.0, 5.0, 5.0, 5.0)
    spool.append(run, [row], [])
    spool.close()
    assert main(["runs", "delete", "gone", "--yes", "--db", url]) == 0  # no lease: not live
    done = replay_folder(ledger, tmp_path / "s", str(tmp_path / "l.db"))
    assert done.failed == () and len(done.orphaned) == 1  # 38e5f82: failed, on every replay
    assert not list((tmp_path / "s").glob("*.jsonl")) and list((tmp_path / "s").glob("*.deleted-run"))
    assert main(["replay", "--db", url, "--spool-dir", str(tmp_path / "s")]) == 0
