"""The spool: energy rows the ledger could not take, kept on local disk until it can.

A ledger outage (PostgreSQL down, its disk full) must not lose the rows
flushed meanwhile, and they must not die with the process either. Each
process appends such rows to its own spool file: one JSON object a line,
one ``write`` and ``fsync`` per flush, so a killed process keeps every flush
it spooled. The file is flocked while its process lives; whoever finds it
unlocked (the same process at its next flush or at close, a later start,
`wattlog replay`) replays it. The ledger keys rows by interval
(:meth:`~wattlog.accounting.ledger.store.Ledger.record_intervals`), so a
replay that is interrupted and run again never counts a row twice.

The spool is bounded (``max_bytes``): rows past the bound are lost, and the
loss is counted, logged as an error and recorded as a gap per device when
the ledger is back. A torn last line (a crash mid-write) is skipped and counted.

A full disk: :meth:`Spool.open` (when measuring starts) writes the header and keeps
``reserve_bytes`` allocated past the file's end (spool_space), or says in one line that
it could not. Rows that could not be spooled even so are lost, counted, and their span kept
in memory as a gap per device, written with the next line that fits (or to the ledger
when it is back), so a process killed after the disk had room again leaves no silent hole.

Layout: ``<folder>/<host>-<pid>-<run>.jsonl``; its first line names the ledger
(password hidden), so a spool folder shared by several ledgers replays each
file into its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import socket
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from wattlog.accounting.ledger.replay import Replayed as Replayed
from wattlog.accounting.ledger.replay import replay_folder as replay_folder
from wattlog.accounting.ledger.replay import write_batches as _write
from wattlog.accounting.ledger.spool_lines import (
    describe_bad,
    header_of,
    keep_aside,
    read_spool,
    run_key,
)
from wattlog.accounting.ledger.spool_space import DEFAULT_RESERVE_BYTES, reserve_keep_size, write_durably
from wattlog.accounting.ledger.store import Ledger
from wattlog.errors import ConfigError, PlantedFolder
from wattlog.gap_reasons import GapReason
from wattlog.records import BandRevision, EnergyInterval, Gap
from wattlog.telemetry.private import private_folder

log = logging.getLogger(__name__)

ENV_VAR = "WATTLOG_SPOOL_DIR"
DEFAULT_MAX_BYTES = 64 * 2**20
"""About 250,000 rows: a day of 8 devices at 10 s flushes, ten times over."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_LOST = "energy of this stretch lost, {rows} rows, {joules:.1f} J"
LOSS_REASON = GapReason.NOT_STORED.recorded("spool full (bound {bound} bytes): " + _LOST)
WRITE_LOSS_REASON = GapReason.NOT_STORED.recorded("spool not writable ({why}): " + _LOST)


def default_folder(environ: Mapping[str, str] | None = None) -> Path:
    """$WATTLOG_SPOOL_DIR, else $XDG_STATE_HOME/wattlog-spool, else ~/.local/state/wattlog-spool.

    Never a folder named `wattlog`: run from its parent, it would shadow the package.
    """
    env = os.environ if environ is None else environ
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR])
    state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "wattlog-spool"


class Spool:
    """One process's spool file for one ledger; appends are durable, replay is idempotent.

    Args:
        folder: Where spool files live (created on the first append).
        ledger: The ledger's printable name (engine.describe_url): written into the file.
        run: The run's id or name (part of the file name).
        max_bytes: Bound of the file; rows past it are lost, counted and recorded as gaps.
        reserve_bytes: Room kept allocated past the file's end for a full disk (0: none).
        reserve: Allocates (fd, bytes) past the file's end, raises OSError (a seam: spool_space).
        write: Writes and fsyncs (handle, text), raises OSError (a seam: a full disk in tests).
        run_name: The run's name, written in the header with `ledger_key`: replay into a ledger
            replaced meanwhile (another identity) finds the run by it ("": not known, ids trusted).
        ledger_key: The ledger's identity pinned at the start (identity.LedgerIdentity.key).

    Raises:
        ConfigError: max_bytes is not positive, or reserve_bytes negative.
    """

    def __init__(
        self,
        folder: Path,
        ledger: str,
        run: int | str = "",
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        reserve_bytes: int = DEFAULT_RESERVE_BYTES,
        reserve: Callable[[int, int], None] = reserve_keep_size,
        write: Callable[[IO[str], str], None] = write_durably,
        run_name: str = "",
        ledger_key: Sequence[int | str | None] | None = None,
    ) -> None:
        if not max_bytes > 0 or reserve_bytes < 0:
            raise ConfigError(
                f"the spool bound must be > 0 bytes and its reserve >= 0, got {max_bytes}, {reserve_bytes}"
            )
        self.reserve_bytes = reserve_bytes
        self.run_name = run_name
        self.ledger_key = list(ledger_key) if ledger_key is not None else None
        self._reserve = reserve
        self._write = write
        self.folder = Path(folder)
        self.ledger = ledger
        self.max_bytes = max_bytes
        name = _UNSAFE.sub("_", f"{socket.gethostname()}-{os.getpid()}-{run}")
        self.path = self.folder / f"{name}.jsonl"
        self.rows = 0
        self.joules = 0.0
        self.ends = 0
        self.events = 0
        self.revisions = 0
        self.gaps = 0
        """Gap lines of rows lost earlier (a full disk), written once the disk had room again."""
        self.lost_rows = 0
        self.lost_j = 0.0
        self._lost: dict[tuple[str, str, str], Gap] = {}  # (run, host, device) -> merged span
        self._lost_by_device: dict[tuple[str, str, str], tuple[int, float]] = {}  # -> (rows, joules)
        self._file: IO[str] | None = None
        self._size = 0
        self._fresh = False  # spooling to a fresh folder: the given one was planted

    @property
    def lost_gaps(self) -> list[tuple[str, Gap]]:
        """(run, gap) per device whose rows the bound dropped and the ledger does not have yet."""
        return [(run, gap) for (run, _, _), gap in self._lost.items()]

    def append(self, run: int | str, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        """Append one flush's rows and fsync them; past the bound they are lost and the loss recorded.

        Raises:
            OSError: The file cannot be written (its disk is full too): nothing was spooled.
        """
        lines = [json.dumps({"run": run, "type": "interval", **r.as_dict()}) for r in intervals]
        lines += [json.dumps({"run": run, "type": "gap", **asdict(g)}) for g in gaps]
        data = "".join(line + "\n" for line in lines)
        self._open()
        if self._size + len(data.encode()) > self.max_bytes:
            self.record_loss(run, intervals, gaps)
            return
        self._append_lines(data)
        self.rows += len(intervals)
        self.joules += sum(r.energy_j for r in intervals)

    def append_end(self, run: int | str, status: str, end_s: float) -> None:
        """Spool the end of a run the ledger could not record; replay ends the run with it.

        Raises:
            OSError: The file cannot be written (nothing of the line is left in it).
        """
        self._append_lines(json.dumps({"run": run, "type": "end", "status": status, "end_s": end_s}) + "\n")
        self.ends += 1

    def append_event(self, run: int | str, event: Mapping[str, Any]) -> None:
        """Spool an event the ledger could not take (Ledger.record_event's keywords, with its time_s).

        Replay stores it once: an event the run already holds (same kind, time and step) is skipped.

        Raises:
            OSError: The file cannot be written (nothing of the line is left in it).
        """
        self._append_lines(json.dumps({"run": run, "type": "event", **event}) + "\n")
        self.events += 1

    def append_revisions(self, run: int | str, revisions: Sequence[BandRevision]) -> None:
        """Spool band revisions the ledger could not take; replay stores each once, after the rows it revises.

        Raises:
            OSError: The file cannot be written (nothing of the lines is left in it).
        """
        lines = [json.dumps({"run": run, "type": "revision", **asdict(r)}) for r in revisions]
        self._append_lines("".join(line + "\n" for line in lines))
        self.revisions += len(revisions)

    def discard(self) -> int:
        """Drop every line (its run was deleted from the ledger); returns the energy rows dropped."""
        dropped = self.rows
        if self._file is not None:
            self._file.truncate(0)
            self._file.seek(0)
            self._write_header(self._file)
            self._top_up(self._file)
        self.rows = self.ends = self.events = self.revisions = self.gaps = 0
        self.joules = 0.0
        return dropped

    @property
    def waiting(self) -> bool:
        """Whether lines wait to be replayed (rows, run starts and ends, events, band revisions, gaps)."""
        return bool(self.rows or self.ends or self.events or self.revisions or self.gaps)

    def open(self) -> Spool:
        """Create the file and reserve room past its end now (measuring starts); one line if it cannot.

        Measuring goes on either way: without the room, a disk that fills loses rows from the
        first flush that cannot be spooled (counted, recorded as a gap).
        """
        try:
            handle = self._open()
            if self.reserve_bytes:
                self._reserve(handle.fileno(), self.reserve_bytes)
        except (OSError, ConfigError) as error:  # a full disk, a read-only one, a planted folder
            log.warning(
                "no room could be reserved for spool %s (%s): if its disk fills while the ledger is down, "
                "energy rows are lost from the first flush that cannot be spooled (counted, kept as gaps)",
                self.path,
                (error.strerror if isinstance(error, OSError) else None) or error,
            )
        return self

    def append_start(self, run: str, fields: Mapping[str, Any]) -> None:
        """Spool the start of a run the ledger could not register (Ledger.start_run's keywords).

        Replay creates the run (with its true start) before storing its rows, events and end;
        a run of that name already in the ledger takes them.

        Raises:
            OSError: The file cannot be written (nothing of the line is left in it).
        """
        self._append_lines(json.dumps({"run": run, "type": "start", **fields}) + "\n")
        self.ends += 1  # a line to replay, like an end: the file is kept until it is stored

    def _append_lines(self, data: str) -> None:
        """Append whole lines (and the gaps of rows lost before) and fsync them; on failure cut the
        file back so no torn line is left."""
        handle = self._open()
        offset = self._size
        pending = [
            json.dumps({"run": run_key(run), "type": "gap", **asdict(g)})
            for (run, _, _), g in self._lost.items()
        ]
        try:
            self._write(handle, data + "".join(line + "\n" for line in pending))
        except OSError:
            with contextlib.suppress(OSError):  # drop the torn tail so the file stays line-aligned
                handle.truncate(offset)
                handle.seek(offset)
            raise
        self._size = handle.tell()
        if pending:  # the disk had room again: the lost stretch is on disk now, not only in memory
            self.gaps += len(pending)
            self._lost.clear()
            self._lost_by_device.clear()
        self._top_up(handle)

    def _top_up(self, handle: IO[str]) -> None:
        """Keep reserve_bytes allocated past the end (said once at open() when it cannot be)."""
        if self.reserve_bytes:
            with contextlib.suppress(OSError):
                self._reserve(handle.fileno(), self.reserve_bytes)

    def replay(self, ledger: Ledger) -> int:
        """Write what this spool holds (and the record of any loss) to the ledger; empty it on success.

        Returns:
            Rows the ledger did not hold before.

        Raises:
            LedgerError: The ledger is still unavailable (the file is kept for the next try).
        """
        written = 0
        if self.waiting and self._file is not None:
            content = read_spool(self.path)
            written = _write(ledger, content.batches)
            if content.bad:  # a disk that returned garbage: keep the lines, say where, replay the rest
                log.error("%s", describe_bad(self.path, content.bad, keep_aside(self.path, content.bad)))
            self._file.truncate(0)
            self._file.seek(0)
            self._write_header(self._file)
            self._top_up(self._file)  # the truncation freed the reserved room too
            self.rows = self.ends = self.events = self.revisions = self.gaps = 0
            self.joules = 0.0
        for (run, host, device), gap in list(self._lost.items()):
            ledger.record_intervals(run_key(run), [], [gap])
            del self._lost[(run, host, device)]
        return written

    def close(self) -> None:
        """Release the file; an empty one is removed, one with rows stays for `wattlog replay`."""
        if self._file is None:
            return
        if not self.waiting:
            with contextlib.suppress(OSError):
                self.path.unlink()
                if self._fresh:  # the fallback folder only this process knew: nothing left in <tmp>
                    self.folder.rmdir()
        self._file.close()
        self._file = None

    def _open(self) -> IO[str]:
        if self._file is None:
            self._private_folder()
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            handle = os.fdopen(descriptor, "a+", encoding="utf-8")
            try:  # a failure closes the handle: a leaked one would hold the flock against every retry
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # our own pid: nobody else holds it
                if handle.seek(0, os.SEEK_END) == 0 or header_of(self.path) is None:  # new, or torn
                    handle.truncate(0)  # nothing follows a torn header: the first append that failed wrote it
                    self._write_header(handle)
            except BaseException:
                handle.close()  # a header cut by a full disk is rewritten whole at the next try
                raise
            self._size = handle.tell()
            self._file = handle
        return self._file

    def _private_folder(self) -> None:
        """Check the folder is ours and private; a planted one is named once and a fresh one used.

        Refusing would lose the rows the ledger could not take (counted as lost on 18aee5b).
        """
        try:
            private_folder(self.folder)
        except PlantedFolder as planted:
            fresh = Path(tempfile.mkdtemp(prefix="wattlog-spool-"))  # 0700, a new name: nothing to redirect
            log.warning(
                "%s; spooling to %s instead (store it with `wattlog replay --spool-dir %s`)",
                planted,
                fresh,
                fresh,
            )
            self.folder, self.path, self._fresh = fresh, fresh / self.path.name, True

    def _write_header(self, handle: IO[str]) -> None:
        self._write(
            handle,
            json.dumps(
                {
                    "type": "header",
                    "ledger": self.ledger,
                    "pid": os.getpid(),
                    "run_name": self.run_name,
                    "ledger_key": self.ledger_key,
                }
            )
            + "\n",
        )
        self._size = handle.tell()

    def record_loss(
        self, run: int | str, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap], why: str = ""
    ) -> None:
        """Count rows that could not be spooled and keep their span as a gap per device.

        The gaps are written with the next replay; `why` "" means the bound was reached
        (logged here once), else the reason the file could not be written (the caller says so).
        """
        if not self.lost_rows and not why:
            log.error(
                "spool %s reached its bound of %d bytes: energy rows past it are lost "
                "(counted, and recorded as gaps when the ledger is back)",
                self.path,
                self.max_bytes,
            )
        self.lost_rows += len(intervals)
        self.lost_j += sum(r.energy_j for r in intervals)
        for r in intervals:
            key = (json.dumps(run), r.host, r.device)
            rows, joules = self._lost_by_device.get(key, (0, 0.0))
            self._lost_by_device[key] = (rows + 1, joules + r.energy_j)
        spans = [(r.host, r.device, r.start_s, r.end_s) for r in intervals]
        spans += [(g.host, g.device, g.start_s, g.end_s) for g in gaps]
        for host, device, start_s, end_s in spans:
            key = (json.dumps(run), host, device)
            old = self._lost.get(key)
            if old is not None:
                start_s, end_s = min(start_s, old.start_s), max(end_s, old.end_s)
            rows, joules = self._lost_by_device.get(key, (0, 0.0))
            if why:
                reason = WRITE_LOSS_REASON.format(why=why, rows=rows, joules=joules)
            else:
                reason = LOSS_REASON.format(bound=self.max_bytes, rows=rows, joules=joules)
            self._lost[key] = Gap(host, device, start_s, end_s, reason)
