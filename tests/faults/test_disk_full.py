"""Fault: the ledger's disk fills up mid-run (a real tmpfs where the machine lets us mount one).

On the old code the rows written after the disk filled were lost with the
process and `wattlog run` exited 0 after printing "finished". Here it says
INCOMPLETE, exits 75 with one line on stderr, and `wattlog replay` (once
space is back) stores every row, so the rows tile the run without a hole.
Where no tmpfs can be mounted, ENOSPC is simulated at the file layer (the
spool's own disk full) and the test says so in its skip reason.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, LedgerSink, describe_url, make_engine
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.errors import LedgerError
from wattlog.records import EnergyInterval, Kind, Source


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(
            "cannot mount a tmpfs here (needs root); test_spool_on_a_full_disk_fails_loudly "
            "simulates ENOSPC at the file layer instead"
        )
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def rows_by_device(url: str, run: str) -> dict[str, list[tuple[float, float]]]:
    ledger = Ledger(make_engine(url))
    found: dict[str, list[tuple[float, float]]] = {}
    for row in ledger.energy_rows(ledger.get_run(run).id):
        found.setdefault(row.device, []).append((row.start_s, row.end_s))
    return {device: sorted(spans) for device, spans in found.items()}


def holes(spans: list[tuple[float, float]]) -> int:
    return sum(1 for (_, end), (start, _) in zip(spans, spans[1:], strict=False) if start != end)


def test_ledger_disk_full_to_the_end_says_incomplete_and_replay_restores_every_row(
    small_disk: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{small_disk / 'ledger.db'}"
    make_engine(url).dispose()
    fill = small_disk / "fill"
    child = f"sleep 1.2; dd if=/dev/zero of={fill} bs=4k 2>/dev/null; sleep 1.8"
    env = {**os.environ, "COLUMNS": "200"}
    command = [sys.executable, "-m", "wattlog", "run", "--db", url, "--run", "full", "--flush-s", "0.3"]
    done = subprocess.run([*command, "--", "sh", "-c", child], capture_output=True, text=True, env=env)
    incomplete = [line for line in done.stderr.splitlines() if "is incomplete" in line]
    assert done.returncode == 75, done.stderr[-2000:]
    assert len(incomplete) == 1 and "INCOMPLETE" in done.stdout
    before = rows_by_device(url, "full")

    fill.unlink()
    replay = subprocess.run(
        [sys.executable, "-m", "wattlog", "replay", "--db", url], capture_output=True, text=True, env=env
    )
    assert replay.returncode == 0, replay.stderr
    after = rows_by_device(url, "full")
    spooled = sum(map(len, after.values())) - sum(map(len, before.values()))
    print(
        f"\ndisk full: {sum(map(len, before.values()))} rows in the ledger at exit, {spooled} stored by "
        f"`wattlog replay`; holes per device after replay: {[holes(s) for s in after.values()]}"
    )
    assert spooled > 0
    for device, spans in after.items():
        assert holes(spans) == 0, device  # every flush interval of the run is there, once
        assert spans[-1][1] - spans[0][0] >= 2.5  # through the end of the run
    run = Ledger(make_engine(url)).get_run("full")
    assert run.status == "finished" and run.end_s is not None  # the end the full disk refused, replayed


def test_spool_on_a_full_disk_fails_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """ENOSPC simulated at the file layer: nothing half-written, the loss counted, one line, a gap.

    On the old code the sink raised at every flush (the agent logged a traceback each time: 712
    stderr lines), kept the rows in memory and lost them at exit with no gap recorded.
    """

    class Down(Ledger):
        def record_intervals(self, run, intervals, gaps=()):  # type: ignore[no-untyped-def]
            raise LedgerError("could not record rows, nothing was written: database or disk is full")

    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    assert run is not None
    spool = Spool(tmp_path / "spool", url, run)
    sink = LedgerSink(Down(ledger.engine), run, spool)
    row = EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 1.0, 5.0, 5.0, 5.0)
    sink.write([row], [])  # spooled
    real_fsync = os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    for i in range(1, 4):  # three flushes while the spool's disk is full
        sink.write([EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, i, i + 1.0, 5.0, 5.0, 5.0)], [])
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert spool.rows == 1 and len(spool.path.read_text().splitlines()) == 2  # header + the first row only
    assert spool.lost_rows == 3 and sink.unwritten_rows == 4  # the run says incomplete, exits non-zero
    said = [r for r in caplog.records if "not writable" in r.getMessage()]
    assert len(said) == 1 and "No space left on device" in said[0].getMessage()  # one line, not one a flush
    sink.ledger = ledger  # the ledger is back
    sink.close()
    [gap] = ledger.gaps(run)
    assert (gap.start_s, gap.end_s) == (1.0, 4.0) and "spool not writable" in gap.reason
    assert sum(t.energy_j for t in ledger.energy_totals(run)) == 5.0


def test_the_agent_says_when_its_file_sink_could_not_store_everything(tmp_path: Path, capsys) -> None:
    from wattlog.cli import main

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    code = main(["agent", "--seconds", "0.3", "--port", "-1", "--jsonl", str(blocker / "rows.jsonl")])
    err = [line for line in capsys.readouterr().err.splitlines() if "incomplete" in line]
    assert code == 75 and len(err) == 1 and "energy rows could not be written by its sinks" in err[0]


def test_a_run_end_that_cannot_be_spooled_leaves_no_torn_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old append_end wrote its line and raised on fsync, leaving it in the file (a torn line)."""
    spool = Spool(tmp_path / "spool", "sqlite:///l.db", 1)
    spool.append(1, [EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 1.0, 5.0, 5.0, 5.0)], [])

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        spool.append_end(1, "finished", 2.0)
    monkeypatch.undo()
    lines = spool.path.read_text().splitlines()
    assert len(lines) == 2 and '"type": "end"' not in spool.path.read_text()  # header + the row
    spool.append_end(1, "finished", 2.0)  # space is back: the end lands whole, after the row
    assert (
        spool.path.read_text().endswith('"end_s": 2.0}\n') and len(spool.path.read_text().splitlines()) == 3
    )


def test_a_spool_whose_header_a_full_disk_tore_is_still_its_ledgers(tmp_path: Path) -> None:
    """38e5f82: the rows appended after a torn header made the file "of other ledgers" to every replay."""
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    spool = Spool(tmp_path / "spool", describe_url(url), run)
    spool.path.parent.mkdir(parents=True, exist_ok=True)
    spool.path.write_bytes(b'{"type": "header", "led')  # the disk filled in the first append's header
    spool.append(run, [EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 1.0, 5.0, 5.0, 5.0)], [])
    spool.close()
    done = replay_folder(ledger, tmp_path / "spool", describe_url(url))
    assert done.other_ledgers == 0 and done.written == 1
