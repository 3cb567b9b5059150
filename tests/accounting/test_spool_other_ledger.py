"""`replay_folder` replays only the spool files of its own ledger (issue 38: its guard had no test).

A spool folder is shared by every ledger an agent on the machine wrote to; a file names its ledger
in its header. Replaying into another ledger would put one ledger's rows into a run of the same
name in another.
"""

from __future__ import annotations

from pathlib import Path

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.engine import describe_url
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.records import EnergyInterval, Kind, Source


def test_a_file_of_another_ledger_is_left_alone_and_counted(tmp_path: Path) -> None:
    mine_url, theirs_url = f"sqlite:///{tmp_path / 'mine.db'}", f"sqlite:///{tmp_path / 'theirs.db'}"
    mine = Ledger(make_engine(mine_url))
    mine.start_run("r")
    folder = tmp_path / "spool"
    spool = Spool(folder, describe_url(theirs_url), "r")
    row = EnergyInterval.of("h", "gpu0", Kind.GPU, Source.COUNTER, 1e9, 1e9 + 10, 1000.0, 900.0, 1100.0)
    spool.append("r", [row], [])
    spool.close()
    done = replay_folder(mine, folder, describe_url(mine_url))
    assert (done.files, done.written, done.other_ledgers) == (0, 0, 1)
    assert mine.energy_totals("r") == []  # nothing of the other ledger's in this one
    assert list(folder.glob("*.jsonl"))  # and its file stays for its own ledger


def test_a_spooled_start_creates_the_run_before_its_rows(tmp_path: Path) -> None:
    """A run the ledger could not register at its start is created on replay, with its spooled start."""
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    folder = tmp_path / "spool"
    spool = Spool(folder, describe_url(url), "late")
    spool.append_start("late", {"project": "p", "site": "jupiter", "host": "h", "start_s": 1e9})
    row = EnergyInterval.of("h", "gpu0", Kind.GPU, Source.COUNTER, 1e9, 1e9 + 10, 1000.0, 900.0, 1100.0)
    spool.append("late", [row], [])
    spool.close()
    done = replay_folder(ledger, folder, describe_url(url))
    run = ledger.get_run("late")
    assert (done.files, run.site, run.start_s) == (1, "jupiter", 1e9)
    assert [t.figure.energy_j for t in ledger.energy_totals("late")] == [1000.0]
