"""`wattlog replay` ends with the one verdict (accounting/ledger/completeness.py), as run and node do.

On 18aee5b it decided alone: a file the ledger refused raised (exit 2, a line of its own words),
bad lines exited 1, and neither said what was left out of the ledger. Now what it could not
store is a :class:`Completeness`: one closing line "wattlog replay: incomplete: ..." and exit 75.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, describe_url, make_engine
from wattlog.accounting.ledger.spool import Spool
from wattlog.cli import main
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.sinks import INCOMPLETE_EXIT


def test_a_spool_file_the_ledger_refuses_makes_replay_incomplete_in_one_closing_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    Ledger(make_engine(url)).start_run("here")
    rows = [
        EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, i, i + 1.0, 5.0, 5.0, 5.0) for i in range(5)
    ]
    spool = Spool(tmp_path / "s", describe_url(url), "ghost")
    spool.append("ghost", rows, [])  # a run by name whose start line is not in the file: no run to go to
    spool.close()
    code = main(["replay", "--db", url, "--spool-dir", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == INCOMPLETE_EXIT, err  # 18aee5b: 2
    assert len(err) == 1 and err[0].startswith(
        "wattlog replay: incomplete: 5 energy rows are not in the ledger"
    )
    assert "1 spool file(s) could not be replayed and stay for the next `wattlog replay`" in err[0]
    assert spool.path.exists()  # kept for the next try


def test_a_complete_replay_says_nothing_more_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    Ledger(make_engine(url)).start_run("here")
    spool = Spool(tmp_path / "s", describe_url(url), "here")
    spool.append(
        "here", [EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 1.0, 5.0, 5.0, 5.0)], []
    )
    spool.close()
    assert main(["replay", "--db", url, "--spool-dir", str(tmp_path / "s")]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "1 energy rows stored from 1 spool file(s)" in captured.out
