"""Replaying spool files into the ledger: each unlocked file of this ledger, each row once.

The spool (accounting/ledger/spool.py) writes the files; this reads them back, as untrusted input
(regular files only, bounded: spool_lines), and stores their batches. The ledger keys rows by
interval, so a replay interrupted and run again never counts a row twice.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from wattlog.accounting.ledger.admin import set_aside_if_deleted
from wattlog.accounting.ledger.completeness import Completeness
from wattlog.accounting.ledger.identity import LedgerIdentity, identity_of
from wattlog.accounting.ledger.runs import RunSpec
from wattlog.accounting.ledger.spool_lines import (
    Batch,
    describe_bad,
    keep_aside,
    read_header,
    read_spool,
    run_key,
)
from wattlog.accounting.ledger.store import Ledger
from wattlog.errors import LedgerError, UntrustedInput
from wattlog.untrusted import open_regular

_CHUNK = 5000  # rows per replay transaction


@dataclass(frozen=True, slots=True)
class Replayed:
    """What one replay did.

    Attributes:
        files: Spool files replayed and removed (or emptied).
        rows: Energy rows read from them.
        written: Rows the ledger did not hold yet and now does (rows - written were already there).
        busy: Files skipped because a live process holds them.
        other_ledgers: Files left alone because they belong to another ledger.
        torn: Unreadable last lines skipped (a crash mid-write).
        failed: One line per file that could not be replayed (still on disk).
        rejected: One line per file with bad lines (named by line; kept in `<file>.rejected`).
        orphaned: One line per file of a run deleted from the ledger (set aside, never replayed).
        moved: One line per run stored by name: its id named another run or none (the ledger was replaced).
        unstored_rows: Energy rows of the files that could not be replayed (still on disk).
    """

    files: int = 0
    rows: int = 0
    written: int = 0
    busy: int = 0
    other_ledgers: int = 0
    torn: int = 0
    failed: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()
    orphaned: tuple[str, ...] = ()
    moved: tuple[str, ...] = ()
    unstored_rows: int = 0

    def completeness(self) -> Completeness:
        """What the replay left out of the ledger, as the one verdict every ending reads.

        >>> Replayed(files=2).completeness().complete
        True
        >>> Replayed(failed=("a.jsonl: down",), unstored_rows=3).completeness().reasons()[1][:40]
        '1 spool file(s) could not be replayed an'
        """
        causes = []
        if self.failed:
            causes.append(
                f"{len(self.failed)} spool file(s) could not be replayed and stay for the next "
                f"`wattlog replay` ({self.failed[0]})"
            )
        if self.rejected:
            causes.append(
                f"{len(self.rejected)} spool file(s) refused or with bad lines kept aside, named above"
            )
        return Completeness(rows=self.unstored_rows, other=tuple(causes))


def replay_folder(ledger: Ledger, folder: Path, where: str, *, skip: Path | None = None) -> Replayed:
    """Replay every unlocked spool file of `folder` that belongs to ledger `where`, then remove it.

    Args:
        ledger: The ledger to write into.
        folder: The spool folder.
        where: The ledger's printable name (engine.describe_url); other ledgers' files are left alone.
        skip: A file not to touch (the caller's own live spool).
    """
    files = written = rows = busy = others = torn = unstored = 0
    failed: list[str] = []
    rejected: list[str] = []
    orphaned: list[str] = []
    moved: list[str] = []
    paths = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    here = _identity(ledger) if paths else None
    for path in paths:
        if skip is not None and path == skip:
            continue
        if not path.is_file():  # a FIFO would block, a device never end: named, never opened
            rejected.append(f"{path} refused: not a regular file")
            continue
        with locked(path) as held:
            if not held:
                busy += 1
                continue
            if not path.exists():  # replayed and removed by another process meanwhile
                continue
            try:  # a file from elsewhere: too big, too many lines
                header = read_header(path)
                if header.ledger != where:
                    others += 1
                    continue
                content = read_spool(path)
            except UntrustedInput as error:
                rejected.append(str(error))
                continue
            try:
                replaced = here is not None and header.ledger_key not in (None, here.key)
                written += write_batches(ledger, content.batches, header.run_name if replaced else "", moved)
            except LedgerError as error:
                note = set_aside_if_deleted(path, content.batches, error)  # else it would fail forever
                (orphaned if note else failed).append(note or f"{path}: {error}")
                unstored += 0 if note else content.rows
                continue
            if content.bad:
                rejected.append(describe_bad(path, content.bad, keep_aside(path, content.bad)))
            rows += content.rows
            torn += content.torn
            files += 1
            path.unlink()
    return Replayed(
        files, rows, written, busy, others, torn,
        tuple(failed), tuple(rejected), tuple(orphaned), tuple(moved), unstored,
    )  # fmt: skip


def _identity(ledger: Ledger) -> LedgerIdentity | None:
    """The ledger's identity now, to compare with each spool's (None: unknown, the spools' ids trusted)."""
    try:
        return identity_of(ledger.engine)
    except SQLAlchemyError:  # unreachable: each file's replay says so
        return None


@contextlib.contextmanager
def locked(path: Path) -> Iterator[bool]:
    """Whether `path` could be flocked (held for the block), never following it to a FIFO."""
    try:
        handle = open_regular(path, "spool file")  # never "a": that would recreate a file just replayed
    except UntrustedInput:  # gone, or swapped for a FIFO since the check
        yield False
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_batches(
    ledger: Ledger, batches: Mapping[str, Batch], run_name: str = "", moved: list[str] | None = None
) -> int:
    """Store a spool's batches (each run's start, rows, gaps, events, revisions, end); rows written.

    Args:
        ledger: Where to store them.
        batches: The spool's lines by run.
        run_name: The run's name from the spool's header ("": unknown, its ids are trusted).
        moved: Gets one line per run stored by name because its id is not that run here.
    """
    written = 0
    for run, batch in batches.items():
        key = _in_this_ledger(ledger, run_key(run), batch, run_name, moved if moved is not None else [])
        if batch.start is not None and isinstance(key, str) and ledger.find_run(key) is None:
            fields = dict(batch.start)
            start_s = float(fields.pop("start_s"))
            ledger.start_run(key, RunSpec(**fields), start_s=start_s)
        for i in range(0, max(len(batch.intervals), 1), _CHUNK):
            gaps = batch.gaps if i == 0 else []
            written += ledger.record_intervals(key, batch.intervals[i : i + _CHUNK], gaps)
        if batch.events:
            ledger.record_events_once(key, batch.events)
        if batch.revisions:  # after the rows they revise, so the totals take them (each once)
            ledger.record_revisions(key, batch.revisions)
        if batch.end is not None:
            ledger.end_run(key, batch.end[0], end_s=batch.end[1])
    return written


def _in_this_ledger(ledger: Ledger, key: int | str, batch: Batch, name: str, moved: list[str]) -> int | str:
    """The run's key here: its spooled id, or its name when the id is another run's or none's.

    A ledger replaced during the run (the writer's identity check spooled the rest) holds another
    run under that id, or none: the rows go to the run of that name, created from the spool if
    it is not there, never to a stranger's run and never to a file that fails every replay.
    """
    if not name or not isinstance(key, int):
        return key
    found = ledger.find_run(key)
    if found is not None and found.name == name:
        return key
    here = "another run's" if found is not None else "no run's"
    if ledger.find_run(name) is None:
        times = [r.start_s for r in batch.intervals] + [g.start_s for g in batch.gaps]
        times += [float(e["time_s"]) for e in batch.events] + ([batch.end[1]] if batch.end else [])
        ledger.start_run(name, RunSpec(), start_s=min(times) if times else None)
        moved.append(
            f"run {name}: its spooled id {key} is {here} in this ledger (replaced during the run): created "
            "here from its spool, with its rows but not its settings (project, site: `wattlog runs` to set)"
        )
    else:
        moved.append(
            f"run {name}: its spooled id {key} is {here} in this ledger (replaced during the run): "
            "stored by its name"
        )
    return name
