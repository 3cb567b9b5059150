"""Faults: whether a run is all in the ledger was decided in four places with their own words.

On 38e5f82 `wattlog run`, `wattlog node`, the SLURM agent and the demo each built their own
"incomplete" line, the Tracker (and so the framework callbacks) said nothing when its run's end
went to the spool, and `wattlog run` with the ledger down said "the figures ... above lack N
energy rows" when no figure had been shown. Now :class:`Completeness` decides, and every
ending prints its line and takes its exit code.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from wattlog.accounting.ledger import Ledger
from wattlog.cli import main
from wattlog.errors import LedgerError, LedgerUnavailable
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.sinks import INCOMPLETE_EXIT
from wattlog.trainer.tracker import Tracker


def test_every_cause_counts_and_a_failed_command_keeps_its_code() -> None:
    from wattlog.accounting.ledger.completeness import Completeness

    assert Completeness().complete and Completeness().exit_code(0) == 0
    causes = [Completeness(rows=1), Completeness(ends=1), Completeness(events=1), Completeness(revisions=1)]
    for done in causes:
        assert not done.complete and done.exit_code(0) == INCOMPLETE_EXIT and done.exit_code(143) == 143
        assert done.line("wattlog node", "r").startswith("wattlog node: run r is incomplete: ")
    said = Completeness(revisions=3).with_other("the ledger was replaced during the run").reasons()
    assert said[0].startswith("3 band revisions waiting in the spool") and len(said) == 2


def test_the_tracker_says_when_its_runs_end_went_to_the_spool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"

    def down(*args: object, **kwargs: object) -> None:
        raise LedgerError("could not end the run, nothing was written: connection refused")

    sensors = [SimulatedSensor(simulated_gpus(1))]
    config = AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path / "locks")
    tracker = Tracker("t", db=db, sensors=sensors, agent_config=config, gc_every=None, quiet=True)
    with caplog.at_level(logging.ERROR), tracker:
        tracker.step(tokens=1)
        monkeypatch.setattr(Ledger, "end_run", down)
    lines = [r.getMessage() for r in caplog.records if "is incomplete" in r.getMessage()]
    assert len(lines) == 1  # 38e5f82: none
    assert lines[0].startswith("wattlog tracker: run t is incomplete: its start or end waiting in the spool")


def _always_down(monkeypatch: pytest.MonkeyPatch) -> None:
    @contextmanager
    def transaction(self: Ledger, what: str) -> Iterator[Any]:
        raise LedgerUnavailable(f"could not {what}, nothing was written: connection refused")
        yield  # pragma: no cover

    monkeypatch.setattr(Ledger, "transaction", transaction)


def test_a_run_whose_figures_could_not_be_shown_never_says_figures_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    monkeypatch.setenv("WATTLOG_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("COLUMNS", "300")
    _always_down(monkeypatch)
    args = ["--run", "down", "--db", db, "--flush-s", "0.1", "--lock-dir", str(tmp_path)]
    code = main(["run", *args, "--", "true"])
    out, err = capsys.readouterr()
    assert code == INCOMPLETE_EXIT
    assert "above" not in out  # 38e5f82: "the figures of down above lack N energy rows"
    assert [line for line in err.splitlines() if "is incomplete" in line] == [
        line for line in err.splitlines() if line.startswith("wattlog: run down is incomplete: ")
    ]


OUTAGE_DURING_RUN = """
import sys
from contextlib import contextmanager
from wattlog.accounting.ledger.store import Ledger
from wattlog.errors import LedgerUnavailable
from wattlog.cli import main

real_transaction, real_record = Ledger.transaction, Ledger.record_intervals
down = []

@contextmanager
def transaction(self, what):
    if down:
        raise LedgerUnavailable(f"could not {what}, nothing was written: connection refused")
    with real_transaction(self, what) as session:
        yield session

def record_intervals(self, *args, **kwargs):
    down.append(True)  # the server goes down at the first flush, after the run started
    return real_record(self, *args, **kwargs)

Ledger.transaction, Ledger.record_intervals = transaction, record_intervals
sys.exit(main(sys.argv[1:]))
"""


def test_a_ledger_outage_during_wattlog_run_is_one_line_and_the_verdict(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "300", "WATTLOG_SPOOL_DIR": str(tmp_path / "s")}
    args = [
        "run",
        "--run",
        "o",
        "--db",
        db,
        "--flush-s",
        "0.2",
        "--lock-dir",
        str(tmp_path),
        "--site",
        "jupiter",
    ]
    done = subprocess.run(
        [sys.executable, "-c", OUTAGE_DURING_RUN, *args, "--", "sleep", "1"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    err = done.stderr.splitlines()
    assert done.returncode == INCOMPLETE_EXIT, done.stderr
    assert len(err) == 2, done.stderr  # 38e5f82: 5 lines here (11 with PostgreSQL)
    assert "ledger unavailable" in err[0] and "spooled to" in err[0]
    assert err[1].startswith("wattlog: run o is incomplete: ")
    assert "above" not in done.stdout


SITES = """
[sites.ourhall]
description = "our hall"
pue = 1.3
wue_onsite_l_per_kwh = 0.0
wue_offsite_l_per_kwh = 2.0
carbon_intensity_kg_per_kwh = 0.4

[sites.ourhall.sources]
pue = "our meter, 2026"
wue_onsite_l_per_kwh = "closed loop"
wue_offsite_l_per_kwh = "our utility, 2026"
carbon_intensity_kg_per_kwh = "our utility, 2026"
"""


def test_a_site_of_the_users_sites_file_is_named_in_the_closing_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sites.toml").write_text(SITES)
    monkeypatch.setenv("WATTLOG_SITES_FILE", str(tmp_path / "sites.toml"))
    monkeypatch.setenv("COLUMNS", "300")
    db = f"sqlite:///{tmp_path / 'l.db'}"
    args = ["--run", "s", "--site", "ourhall", "--db", db, "--lock-dir", str(tmp_path)]
    assert main(["run", *args, "--", "true"]) == 0
    out, err = capsys.readouterr()
    assert "unknown site" not in err  # 38e5f82: "cannot show the figures of s: unknown site 'ourhall'"
    assert "site ourhall" in out and "CO2" in out


def test_the_slurm_comment_names_a_site_of_the_users_sites_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wattlog.accounting.fleet.slurm_hooks import job_row
    from wattlog.accounting.ledger import RunSpec, make_engine

    (tmp_path / "sites.toml").write_text(SITES)
    monkeypatch.setenv("WATTLOG_SITES_FILE", str(tmp_path / "sites.toml"))
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    ledger.start_run("slurm-1", RunSpec(site="ourhall"))
    _, site = job_row(ledger, "slurm-1", "")  # 38e5f82: ConfigError, unknown site 'ourhall'
    assert site == "ourhall"
