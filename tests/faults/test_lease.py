"""Fault: a run whose process is killed with -9 (or whose node vanishes) stayed `running` forever.

On the old code nothing could end such a run: the ledger, the table and the report showed it
running for good, and the energy after its last flush was missing with no gap. Here the agent
renews the run's lease with each flush; once the lease has run out, the next reader (the report,
the table) or `wattlog runs reap` closes the run as `lost` at the lease's end, with a gap per device
from its last row to that end and a `lost` event.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.faults.test_preemption import wattlog
from tests.waiting import wait_until
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.lease import LEASE_S, LOST_REASON, reap_lost_runs, renew_lease
from wattlog.clock import SystemClock
from wattlog.dashboards.notify import events_to_send
from wattlog.dashboards.report.data import load_report
from wattlog.events import EventKind


class LaterClock(SystemClock):
    """The real clocks, with the wall clock `ahead_s` in the future (a reader after the lease ran out)."""

    def __init__(self, ahead_s: float) -> None:
        self.wall = lambda: time.time() + ahead_s  # type: ignore[method-assign]


def killed_run(tmp_path: Path) -> str:
    """A `wattlog run` killed with -9 after a few flushes; returns its ledger URL."""
    db = f"sqlite:///{tmp_path / 'l.db'}"
    args = ["run", "--run", "k", "--site", "jupiter", "--db", db, "--flush-s", "0.2"]
    with wattlog([*args, "--lock-dir", str(tmp_path / "locks"), "--", "sleep", "60"], tmp_path) as process:
        wait_until(
            lambda: (tmp_path / "l.db").exists() and _stored_j(db) > 0, 60.0, "no rows in 60 s", poll_s=0.2
        )
        time.sleep(0.5)  # a few more flushes stored before the kill (not a wait for an event)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    return db


def _stored_j(db: str) -> float:
    try:
        return sum(t.energy_j for t in Ledger(make_engine(db)).energy_totals("k"))
    except Exception:
        return 0.0


def test_a_killed_run_is_closed_as_lost_by_the_next_reader_with_a_gap_to_its_lease_end(
    tmp_path: Path,
) -> None:
    db = killed_run(tmp_path)
    assert Ledger(make_engine(db)).get_run("k").status == "running"  # nothing could end it
    assert reap_lost_runs(Ledger(make_engine(db))) == []  # its lease still runs
    later = Ledger(make_engine(db), clock=LaterClock(LEASE_S + 5))
    report = load_report(later, "k")  # the next reader
    assert report.run.status == "lost"  # old code: running, for ever
    run = later.get_run("k")
    gaps = [g for g in later.gaps("k") if g.reason == LOST_REASON]
    last_row_s = max(r.end_s for r in later.energy_rows(run.id))
    assert gaps and all(g.end_s == run.end_s and g.start_s <= g.end_s for g in gaps)
    assert min(g.start_s for g in gaps) <= last_row_s < run.end_s  # from its last row to the lease's end
    assert [e.kind for e in later.events("k") if e.kind == EventKind.LOST] == [EventKind.LOST]
    assert "lost" in set(report.events["kind"])
    assert [e["kind"] for e in events_to_send(later.events("k"), "k")] == [EventKind.LOST]  # `webhook send`
    print(
        f"\nkilled -9: closed as lost {run.end_s - last_row_s:.1f} s after its last row, {len(gaps)} gap(s)"
    )
    assert reap_lost_runs(later) == []  # once
    from wattlog.cli import app

    table = CliRunner().invoke(app, ["table", "k", "--db", db, "--format", "markdown"])
    assert table.exit_code == 0 and "run lost" in table.output, table.output


def test_wattlog_reap_closes_it_and_two_readers_close_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(db))
    ledger.start_run("a", RunSpec(site="jupiter"))
    renew_lease(ledger, "a", 1.0)
    later = Ledger(make_engine(db), clock=LaterClock(10.0))
    results: list[int] = []
    readers = [threading.Thread(target=lambda: results.append(len(reap_lost_runs(later)))) for _ in range(2)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(30)
    assert sorted(results) == [0, 1] and ledger.get_run("a").status == "lost"
    assert len(ledger.gaps("a")) == 1  # no row was ever flushed: the whole run is the gap
    ledger.start_run("b", RunSpec(site="jupiter"))
    renew_lease(ledger, "b", 1.0)
    monkeypatch.setattr(SystemClock, "wall", staticmethod(lambda: time.time() + 10.0))
    from wattlog.cli import app

    done = CliRunner().invoke(app, ["runs", "reap", "--db", db])
    assert done.exit_code == 0 and "run 'b' closed as lost" in done.output, done.output
    assert ledger.get_run("b").status == "lost"


def test_an_ended_or_resumed_run_is_not_reaped(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    ledger.start_run("done", RunSpec(site="jupiter"))
    renew_lease(ledger, "done", 1.0)
    ledger.end_run("done")
    ledger.start_run("again", RunSpec(site="jupiter"))
    renew_lease(ledger, "again", 1.0)
    ledger.start_run("again", resume=True)  # a new attempt: the old lease is void until its agent renews
    assert reap_lost_runs(Ledger(ledger.engine, clock=LaterClock(10.0))) == []


def test_an_agent_only_cut_off_from_the_ledger_revives_its_run_at_its_next_renewal(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    ledger.start_run("cut", RunSpec(site="jupiter"))
    renew_lease(ledger, "cut", 1.0)
    assert len(reap_lost_runs(Ledger(ledger.engine, clock=LaterClock(10.0)))) == 1
    renew_lease(ledger, "cut", 60.0)  # the ledger is back: its next flush renews
    run = ledger.get_run("cut")
    assert run.status == "running" and run.end_s is None
    assert ledger.gaps("cut") == [] and [e for e in ledger.events("cut") if e.kind == EventKind.LOST] == []
