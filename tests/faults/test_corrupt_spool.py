"""Fault: a corrupt spool file.

On the old code a bad byte in a file's first 8 KiB made it "a file of other
ledgers", never replayed, exit 0; a bad byte later, or a number stored as a
string, gave a traceback; one negative or NaN row stopped that file and every
later file from replaying. Now each bad line is named by file and line, kept
aside in `<file>.rejected`, the good lines and later files are replayed, and
`wattlog replay` exits 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, describe_url, make_engine
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.sinks import INCOMPLETE_EXIT


def row(i: int, joules: float = 10.0) -> EnergyInterval:
    return EnergyInterval.of(
        "n", "gpu0", Kind.GPU, Source.COUNTER, 10.0 * i, 10.0 * i + 10, joules, joules, joules
    )


def spool_file(folder: Path, url: str, run: int, rows: list[EnergyInterval], name: str) -> Path:
    spool = Spool(folder, describe_url(url), run)
    spool.append(run, rows, [])
    spool.close()
    return spool.path.rename(folder / f"{name}.jsonl")


def damage(path: Path, line: int, how: str) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    if how == "byte":
        lines[line] = lines[line][:20] + b"\xff" + lines[line][21:]
    else:
        item = json.loads(lines[line])
        item["energy_j"] = {"string": "10.0", "negative": -5.0, "nan": float("nan")}[how]
        lines[line] = json.dumps(item).encode() + b"\n"
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    ("line", "how"), [(1, "byte"), (150, "byte"), (3, "string"), (4, "negative"), (5, "nan")]
)
def test_bad_lines_are_named_kept_aside_and_the_rest_replayed(tmp_path: Path, line: int, how: str) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    assert run is not None
    folder = tmp_path / "spool"
    first = spool_file(folder, url, run, [row(i) for i in range(200)], "a")  # 2,000 J, line 1 within 8 KiB
    spool_file(folder, url, run, [row(i) for i in range(200, 300)], "b")  # 1,000 J, a later file
    damage(first, line, how)
    done = replay_folder(ledger, folder, describe_url(url))
    assert done.files == 2 and done.other_ledgers == 0 and not done.failed
    assert len(done.rejected) == 1 and f"{first} line {line + 1}:" in done.rejected[0]
    assert sum(t.energy_j for t in ledger.energy_totals(run)) == 2990.0  # every good row, once
    aside = first.with_name("a.jsonl.rejected")
    assert len(aside.read_bytes().splitlines()) == 1 and not first.exists()
    assert os.stat(aside).st_mode & 0o077 == 0


def test_wattlog_replay_says_one_line_per_bad_file_and_exits_non_zero(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    assert run is not None
    folder = tmp_path / "spool"
    damage(spool_file(folder, url, run, [row(i) for i in range(20)], "a"), 2, "byte")
    command = [sys.executable, "-m", "wattlog", "replay", "--db", url, "--spool-dir", str(folder)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == INCOMPLETE_EXIT, done.stderr  # the one verdict's code (was 1)
    err = done.stderr.strip().splitlines()
    assert (
        "Traceback" not in done.stderr and len(err) == 2 and err[1].startswith("wattlog replay: incomplete:")
    )
    assert "a.jsonl line 3:" in err[0] and "rejected" in err[0]
    assert "19 energy rows stored" in done.stdout
