"""Fault: a spool file from elsewhere that is not what it claims.

On 38e5f82 replay opened every `*.jsonl` of the folder with a plain open (a FIFO
hung `wattlog replay` for ever) and read each file whole (`readlines`), so one
endless line or a huge file was held in memory. Now a file that is not regular is
named and never opened, a file over the size or line cap is refused in one line, and
an over-long line is a bad line skipped without being held.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults.test_corrupt_spool import row, spool_file
from wattlog.accounting.ledger import Ledger, describe_url, make_engine
from wattlog.accounting.ledger.spool import replay_folder
from wattlog.accounting.ledger.spool_lines import MAX_LINE_BYTES, read_spool
from wattlog.errors import UntrustedInput


@pytest.fixture
def ledger_and_run(tmp_path: Path) -> tuple[str, Ledger, int]:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    assert run is not None
    return url, ledger, run


@pytest.mark.timeout(20)
def test_a_fifo_in_the_spool_folder_is_named_not_opened(
    tmp_path: Path, ledger_and_run: tuple[str, Ledger, int]
) -> None:
    url, ledger, run = ledger_and_run
    folder = tmp_path / "spool"
    spool_file(folder, url, run, [row(i) for i in range(3)], "a")
    os.mkfifo(folder / "b.jsonl")
    replayed = replay_folder(ledger, folder, describe_url(url))
    assert replayed.rows == 3
    assert replayed.rejected == (f"{folder / 'b.jsonl'} refused: not a regular file",)


def test_a_long_line_is_skipped_unheld_and_the_rest_replayed(
    tmp_path: Path, ledger_and_run: tuple[str, Ledger, int]
) -> None:
    url, _, run = ledger_and_run
    path = spool_file(tmp_path / "spool", url, run, [row(i) for i in range(3)], "a")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:2], b"x" * (3 * MAX_LINE_BYTES) + b"\n", *lines[2:]]))
    content = read_spool(path)
    assert content.rows == 3 and len(content.bad) == 1
    assert content.bad[0].number == 3 and "longer than" in content.bad[0].reason
    assert len(content.bad[0].raw) < 100  # not kept aside whole


def test_a_file_over_the_caps_is_refused_whole(
    tmp_path: Path, ledger_and_run: tuple[str, Ledger, int]
) -> None:
    url, ledger, run = ledger_and_run
    folder = tmp_path / "spool"
    path = spool_file(folder, url, run, [row(i) for i in range(50)], "a")
    with pytest.raises(UntrustedInput, match="over the 1,000 a spool file may hold"):
        read_spool(path, max_bytes=1000)
    with pytest.raises(UntrustedInput, match="more than 10 lines"):
        read_spool(path, max_lines=10)
