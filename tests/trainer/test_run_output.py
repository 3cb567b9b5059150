"""What `wattlog run` prints at its end: five lines by default, the table when asked, the error last."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wattlog.cli import main


def test_a_run_ends_with_five_lines_and_the_table_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["run", "--run", "quiet", "--db", db, "--", "true"]) == 0
    start, *end = capsys.readouterr().out.splitlines()
    assert start.startswith("Run quiet: measuring") and len(end) == 5  # was 115 lines, Table 19 and all
    assert end[0].startswith("Run quiet finished") and "recorded in the ledger" in end[0]
    assert end[1].startswith("Energy: ") and "band" in end[1] and "source: estimated" in end[1]
    assert "CO2" in end[2] and "water" in end[2] and "site world" in end[2] and "e-" not in end[2]
    assert end[3] == f"Ledger: {tmp_path / 'l.db'}" and f"wattlog table quiet --reference --db {db}" in end[4]
    assert main(["run", "--run", "loud", "--db", db, "--table", "--", "true"]) == 0
    assert "OLMo 2 7B" in capsys.readouterr().out


def test_without_a_site_energy_shows_and_one_line_says_what_to_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["run", "--run", "nosite", "--site", "", "--db", f"sqlite:///{tmp_path / 'l.db'}", "--", "true"])
        == 0
    )
    out = capsys.readouterr().out
    assert "Energy: " in out and "Energy: -" not in out
    assert "no site given; pass site=... (Python) or --site (CLI)" in out


def test_a_command_that_cannot_start_has_its_error_printed_last(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "wattlog", "run", "--run", "nf", "--db", db, "--", "wattlog-no-such-command"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        check=False,
    )
    lines = done.stdout.splitlines()
    # the start, five lines, the gate's verdict (a failed run is not fit to publish), the error
    assert done.returncode == 127 and len(lines) <= 8, done.stdout
    assert "NOT VALID to publish: run failed, not finished" in lines
    assert lines[-1] == "error: command not found: wattlog-no-such-command"  # was above a 115-line table


def test_a_run_whose_end_went_to_the_spool_exits_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.errors import LedgerError
    from wattlog.telemetry.sinks import INCOMPLETE_EXIT

    def down(*args: object, **kwargs: object) -> None:
        raise LedgerError("could not end the run, nothing was written: connection refused")

    monkeypatch.setattr(Ledger, "end_run", down)  # the ledger fails at the end, after every row landed
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["run", "--run", "ends", "--db", db, "--", "true"]) == INCOMPLETE_EXIT  # was 0
    captured = capsys.readouterr()
    assert "INCOMPLETE" in captured.out and "wattlog replay" in captured.err
    assert Ledger(make_engine(db)).get_run("ends").status == "running"  # the end waits in the spool
