"""Fault: concurrent runs on one node, the run holding the CPU/DRAM devices ends first.

On the old code the second run read the holder's counters at its close; the
holder had gone, so it recorded 0 J for CPU and DRAM and only a warning said
so. Now its energy of those devices comes from the holder's rows in the
ledger through the holder's last flush, and the rest is an "agent down" gap.

The split (documented in trainer/join.py and the README): a CPU or DRAM
counter cannot be divided by process, so each run sharing one is attributed
the device's whole energy over its own time.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.publishing.gaps import run_gaps
from wattlog.gap_reasons import GapReason
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.estimate import CPU_UUID, DRAM_UUID, EstimateSensor

pytest.importorskip("torch")
from wattlog.trainer.tracker import Tracker  # noqa: E402  (needs torch)


def tracker(name: str, db: str, locks: Path) -> Tracker:
    config = AgentConfig(port=0, host="node", flush_s=0.1, lock_dir=locks)
    return Tracker(name, db=db, sensors=[EstimateSensor()], agent_config=config, gc_every=None)


def test_the_second_run_keeps_the_shared_devices_energy_when_the_holder_ends_first(tmp_path: Path) -> None:
    db, locks = f"sqlite:///{tmp_path / 'l.db'}", tmp_path / "locks"
    first = tracker("first", db, locks).start()
    time.sleep(0.5)
    second = tracker("second", db, locks).start()
    assert second.agent is not None and second.agent.devices == []  # the first run holds CPU and DRAM
    time.sleep(0.6)
    first.close()  # the holder goes: its counters can no longer be read
    time.sleep(0.4)
    second.close()

    ledger = Ledger(make_engine(db))
    holder = [r for r in ledger.energy_rows(ledger.get_run("first").id)]
    joined = {t.device: t for t in ledger.energy_totals("second")}
    assert sorted(joined) == sorted([CPU_UUID, DRAM_UUID])
    for device, total in joined.items():
        [row] = [r for r in ledger.energy_rows(ledger.get_run("second").id) if r.device == device]
        # the holder's rows over the second run's time, pro rata at the edges, through its last flush
        expected = sum(
            r.energy_j * (min(r.end_s, row.end_s) - max(r.start_s, row.start_s)) / (r.end_s - r.start_s)
            for r in holder
            if r.device == device and r.end_s > row.start_s and r.start_s < row.end_s
        )
        last_flush = max(r.end_s for r in holder if r.device == device)
        assert total.energy_j > 0 and total.energy_j == pytest.approx(expected, rel=1e-9)
        assert row.end_s == pytest.approx(last_flush)
    print(f"\nsecond run, shared devices: {', '.join(f'{d} {t.energy_j:.2f} J' for d, t in joined.items())}")
    summary = run_gaps(ledger, "second")
    down = [g for g in summary.gaps if g.reason is GapReason.AGENT_DOWN]
    assert sorted(g.device for g in down) == sorted([CPU_UUID, DRAM_UUID])
    assert all(g.duration_s > 0.2 for g in down) and summary.widen_j > 0
