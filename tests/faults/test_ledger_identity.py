"""Fault: the ledger deleted or replaced during a run.

On 38e5f82 the SQLite ledger file deleted mid-run kept taking every flush (into the unlinked
file), the run ended "all recorded", exit 0, and 138 J (100 %) were gone. Now the writer pins
the ledger's identity (the file's device and inode) and every later transaction checks it:
a deleted or replaced ledger is an outage (spooled, one line, exit 75).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.identity import LedgerReplaced, guard_identity
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.sinks import INCOMPLETE_EXIT


def _row(start_s: float) -> EnergyInterval:
    return EnergyInterval.of("n", "GPU-0", Kind.GPU, Source.SIMULATED, start_s, start_s + 1, 5.0, 5.0, 5.0)


def test_a_ledger_file_deleted_during_wattlog_run_is_an_outage_never_all_recorded(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "300", "WATTLOG_SPOOL_DIR": str(tmp_path / "s")}
    args = ["run", "--run", "d", "--db", f"sqlite:///{path}", "--flush-s", "0.2", "--lock-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "wattlog", *args, "--", "sh", "-c", f"sleep 1; rm {path}; sleep 1.5"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == INCOMPLETE_EXIT, done.stdout  # 38e5f82: 0, "all recorded"
    assert "all recorded" not in done.stdout and "INCOMPLETE" in done.stdout
    err = done.stderr.splitlines()
    assert len(err) == 2 and "deleted or replaced during the run" in err[0], done.stderr
    assert err[1].startswith("wattlog: run d is incomplete: ")
    spooled = list((tmp_path / "s").glob("*.jsonl"))
    assert len(spooled) == 1 and '"type": "interval"' in spooled[0].read_text()


def test_a_ledger_file_replaced_by_another_refuses_writes_until_the_own_one_is_back(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    ledger = Ledger(make_engine(f"sqlite:///{path}"))
    ledger.start_run("r")
    shutil.copy(path, tmp_path / "copy.db")
    guard = guard_identity(ledger.engine)
    ledger.record_intervals("r", [_row(0.0)])
    path.rename(tmp_path / "own.db")
    (tmp_path / "copy.db").rename(path)  # another ledger at the same path: the same tables, the same run
    with pytest.raises(LedgerReplaced, match="deleted or replaced during the run"):
        ledger.record_intervals("r", [_row(1.0)])
    (tmp_path / "own.db").replace(path)  # the own file back (a ledger moved, then moved back)
    ledger.record_intervals("r", [_row(2.0)])
    guard.release()
    assert sum(t.energy_j for t in ledger.energy_totals("r")) == pytest.approx(10.0)
