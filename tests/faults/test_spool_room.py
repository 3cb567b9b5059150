"""Fault: the spool's disk fills while the ledger is down (issue 45's full disk, second pass).

On 18aee5b the spool took no room ahead (a disk that filled lost the first flush of an
outage), and the span of rows that could not be spooled lived only in memory: a process
killed after the disk had room again left a silent hole in its run. ENOSPC is injected at
the file layer (no tmpfs or loop device without root): os.fsync, or the spool's write seam.
"""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
from typing import IO

import pytest

from wattlog.accounting.ledger import Ledger, LedgerSink, describe_url, make_engine
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.errors import LedgerError
from wattlog.records import EnergyInterval, Kind, Source


class Down(Ledger):
    """The ledger refuses every write (its own disk is full)."""

    def record_intervals(self, run, intervals, gaps=()):  # type: ignore[no-untyped-def]
        raise LedgerError("could not record rows, nothing was written: database or disk is full")


def _row(start_s: float) -> EnergyInterval:
    return EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, start_s, start_s + 1.0, 5.0, 5.0, 5.0)


def _full(fd: int) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def _can_reserve(folder: Path) -> bool:
    from wattlog.accounting.ledger.spool_space import reserve_keep_size  # 18aee5b: no such module

    probe = folder / "probe"
    descriptor = os.open(probe, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        reserve_keep_size(descriptor, 4096)
        return True
    except OSError:
        return False
    finally:
        os.close(descriptor)
        probe.unlink()


def test_room_is_reserved_past_the_spool_end_when_measuring_starts(tmp_path: Path) -> None:
    if not _can_reserve(tmp_path):
        pytest.skip("this filesystem cannot allocate past a file's end (fallocate KEEP_SIZE)")
    spool = Spool(tmp_path / "spool", "sqlite:///l.db", 1).open()
    st = os.stat(spool.path)
    assert st.st_size < 200 and st.st_blocks * 512 >= spool.reserve_bytes  # header only, 1 MiB allocated
    spool.close()
    assert not spool.path.exists()  # nothing waited: the file and its room are gone
    spool = Spool(tmp_path / "spool", "sqlite:///l.db", 2).open()
    spool.append(2, [_row(0.0)], [])
    st = os.stat(spool.path)
    assert st.st_blocks * 512 >= st.st_size + spool.reserve_bytes  # topped up past what was spooled


def test_a_spool_that_cannot_reserve_room_says_so_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool = Spool(tmp_path / "spool", "sqlite:///l.db", 1, reserve=lambda fd, n: _full(fd)).open()
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and "no room could be reserved for spool" in said[0] and "No space left" in said[0]
    spool.append(1, [_row(0.0)], [])  # measuring goes on: the rows are spooled while there is room
    spool.append(1, [_row(1.0)], [])
    assert spool.rows == 2 and len(caplog.records) == 1  # said once, not at every top-up


def _outage(tmp_path: Path) -> tuple[Ledger, int, Spool, LedgerSink]:
    """A ledger with run "r", its spool, and a sink whose ledger is down (spooling every flush)."""
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    assert run is not None
    spool = Spool(tmp_path / "spool", describe_url(url), run)
    return ledger, run, spool, LedgerSink(Down(ledger.engine), run, spool)


def test_a_header_the_full_disk_refused_is_written_whole_at_the_next_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handle that failed to write the header is closed with its flock (a leaked one would refuse
    every later flush of the process)."""
    ledger, run, spool, sink = _outage(tmp_path)
    monkeypatch.setattr(os, "fsync", _full)
    sink.write([_row(0.0)], [])  # the disk is full from the start: the header itself is refused
    monkeypatch.undo()
    sink.write([_row(1.0)], [])  # room again
    assert spool.rows == 1 and spool.lost_rows == 1
    sink.ledger = ledger
    sink.close()
    assert sum(t.energy_j for t in ledger.energy_totals(run)) == 5.0
    [gap] = ledger.gaps(run)
    assert (gap.start_s, gap.end_s) == (0.0, 1.0)


def test_rows_lost_to_a_full_disk_leave_their_gap_on_disk_once_it_has_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after the disk had room again (the gap only in memory on 18aee5b): replay stores every
    row the spool took, the lost stretch as a gap, and calls nothing "of other ledgers"."""
    ledger, run, spool, sink = _outage(tmp_path)
    sink.write([_row(0.0)], [])
    monkeypatch.setattr(os, "fsync", _full)
    for start_s in (1.0, 2.0, 3.0):  # the spool's disk is full too
        sink.write([_row(start_s)], [])
    monkeypatch.undo()
    sink.write([_row(4.0)], [])  # room again: the row, and the lost stretch with it
    assert spool.lost_rows == 3 and spool.rows == 2
    assert spool._file is not None
    spool._file.write('{"run": 1, "type": "interval", "ho')  # killed mid-write: a torn last line
    spool._file.close()  # killed: the flock goes with the process, the file stays
    done = replay_folder(ledger, tmp_path / "spool", describe_url(str(ledger.engine.url)))
    assert (done.other_ledgers, done.files, done.written, done.torn) == (0, 1, 2, 1)
    [gap] = ledger.gaps(run)
    assert (gap.start_s, gap.end_s) == (1.0, 4.0) and "No space left on device" in gap.reason
    spans = sorted((r.start_s, r.end_s) for r in ledger.energy_rows(run))
    assert spans == [(0.0, 1.0), (4.0, 5.0)]  # with the gap, the run is tiled: nothing silent


class _FullOnce:
    """A write seam: the disk is full for the next `times` writes, each leaving half its bytes."""

    def __init__(self, times: int) -> None:
        self.times = times

    def __call__(self, handle: IO[str], data: str) -> None:
        if self.times:
            self.times -= 1
            handle.write(data[: len(data) // 2])
            handle.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def test_a_torn_write_of_a_full_disk_is_cut_back_and_the_file_stays_its_ledgers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    assert run is not None
    write = _FullOnce(0)
    spool = Spool(tmp_path / "spool", describe_url(url), run, write=write).open()
    spool.append(run, [_row(0.0)], [])
    write.times = 1
    with pytest.raises(OSError, match="No space left"):
        spool.append(run, [_row(1.0)], [])
    spool.record_loss(run, [_row(1.0)], [], "No space left on device")
    spool.append(run, [_row(2.0)], [])
    lines = spool.path.read_text().splitlines()
    assert [line[:25] for line in lines] == [
        '{"type": "header", "ledge',
        '{"run": 1, "type": "inter',
        '{"run": 1, "type": "inter',
        '{"run": 1, "type": "gap",',
    ]
    spool.close()
    done = replay_folder(ledger, tmp_path / "spool", describe_url(url))
    assert (done.other_ledgers, done.written, done.torn, done.rejected) == (0, 2, 0, ())
    assert [(g.start_s, g.end_s) for g in ledger.gaps(run)] == [(1.0, 2.0)]
