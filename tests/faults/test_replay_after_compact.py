"""Fault: a spool replayed after `wattlog compact` counted its rows twice.

A flush whose commit landed while the writer saw an error (a dropped
connection) is in the ledger and in the spool. On the old code, compaction
folded the ledger's rows into hourly rows, the replay no longer found them
raw and stored them again: 6,000 J true, 9,000 J stored, exit 0. Compaction
also deleted every raw row of the old hours, including rows committed while
it ran (on PostgreSQL, 63 J deleted without being folded).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Delete, event, insert

from wattlog.accounting.ledger import Ledger, describe_url, make_engine
from wattlog.accounting.ledger.reader import ENERGY
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.accounting.ledger.writes import energy_row
from wattlog.records import EnergyInterval, Kind, Source

HOUR_S = 3600.0 * 490_000


def row(i: int, joules: float = 100.0, device: str = "gpu0") -> EnergyInterval:
    start = HOUR_S + 60.0 * i
    return EnergyInterval.of(
        "n", device, Kind.GPU, Source.COUNTER, start, start + 60.0, joules, joules, joules
    )


def total_j(ledger: Ledger, run: int) -> float:
    return sum(t.energy_j for t in ledger.energy_totals(run))


def test_replay_after_compaction_counts_each_row_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    assert run is not None
    rows = [row(i) for i in range(60)]  # one hour, 6,000 J
    ledger.record_intervals(run, rows[:30])  # landed, though the writer saw an error and spooled them
    spool = Spool(tmp_path / "spool", describe_url(url), run)
    spool.append(run, rows[:30], [])
    spool.append(run, rows[30:], [])  # the ledger was really down for these
    spool.close()
    done = ledger.compact_hourly(0.0, now_s=HOUR_S + 2 * 3600)
    assert done.raw_rows == 30 and done.hourly_rows == 1
    replayed = replay_folder(ledger, tmp_path / "spool", describe_url(url))
    assert replayed.files == 1 and replayed.written == 30  # only the 30 the ledger lacked
    assert ledger.rebuild_totals(run) == 1
    assert total_j(ledger, run) == 6000.0  # old code: 9,000 J
    # a row the compaction never saw (a hole in the folded stretch) is still stored
    ledger.compact_hourly(0.0, now_s=HOUR_S + 2 * 3600)
    assert ledger.record_intervals(run, [row(70)]) == 1


def test_compaction_folds_exactly_the_rows_it_deletes(tmp_path: Path) -> None:
    """A raw row committed by another writer while compaction runs is folded or left raw, never lost.

    On PostgreSQL (READ COMMITTED) a row committed between the old fold's SELECT and its
    DELETE was deleted unfolded (63 J). Here the late row is inserted on the compaction's own
    connection just before its DELETE runs, which is what the DELETE then sees.
    """
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("r").id
    assert run is not None
    ledger.record_intervals(run, [row(i) for i in range(10)])
    late = [energy_row(run, row(20, 63.0, "gpu1"))]

    def arrive_before_delete(conn, clause, *args):  # type: ignore[no-untyped-def]
        if isinstance(clause, Delete) and late:
            conn.execute(insert(ENERGY), [late.pop()])

    event.listen(ledger.engine, "before_execute", arrive_before_delete)
    try:
        ledger.compact_hourly(0.0, now_s=HOUR_S + 2 * 3600)
    finally:
        event.remove(ledger.engine, "before_execute", arrive_before_delete)
    assert not late
    ledger.rebuild_totals(run)
    assert total_j(ledger, run) == 1063.0  # old code: 1,000 J, the late 63 J deleted unfolded
