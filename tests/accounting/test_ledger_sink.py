"""LedgerSink: the agent's flush thread writes one transaction per flush."""

from __future__ import annotations

import pytest

from wattlog.accounting.ledger import Ledger, LedgerSink, make_engine
from wattlog.errors import LedgerError
from wattlog.records import EnergyInterval, Gap, Kind, Source
from wattlog.telemetry.sinks import IntervalSink


def test_sink_writes_each_flush_and_refuses_after_close(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("r")
    sink: IntervalSink = LedgerSink(ledger, run.id)
    row = EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 10.0, 2500.0, 2400.0, 2600.0)
    later = EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, 10.0, 20.0, 2500.0, 2400.0, 2600.0)
    sink.write([row, later], [Gap("n", "gpu1", 0.0, 10.0, "lost")])
    sink.write([row], [Gap("n", "gpu1", 0.0, 10.0, "lost")])  # a retry of rows that landed: kept once
    sink.write([], [])
    sink.close()
    [total] = ledger.energy_totals(run.id)
    assert (total.energy_j, total.rows) == (5000.0, 2) and len(ledger.gaps(run.id)) == 1
    with pytest.raises(LedgerError, match="closed"):
        sink.write([row], [])


def test_sink_for_a_missing_run_fails_without_writing(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    sink = LedgerSink(ledger, "ghost")
    with pytest.raises(LedgerError, match="run 'ghost' does not exist"):
        sink.write([EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 10.0, 1.0, 1.0, 1.0)], [])
