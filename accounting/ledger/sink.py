"""LedgerSink: the agent's flush thread writes each interval's energy into the ledger."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Sequence

from wattlog.accounting.ledger.admin import run_deleted
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.windows import record_windows
from wattlog.causes import LEDGER_OUTAGE, RUN_DELETED, SPOOL_UNWRITABLE
from wattlog.errors import ConfigError, LedgerError
from wattlog.records import BandRevision, EnergyInterval, Gap

log = logging.getLogger(__name__)


class LedgerSink:
    """An :class:`wattlog.telemetry.sinks.IntervalSink` that stores each flush in one ledger transaction.

    Without a spool, a failed write raises LedgerError and leaves nothing
    half-written, so the agent keeps the rows and retries. With a spool, rows
    the ledger refuses for want of a database (down, disk full) go to the
    spool file instead and are replayed, each exactly once, at the next flush
    that reaches the ledger, at close, or by `wattlog replay`; its first write
    also replays the spool files that dead processes left for this ledger.
    Invalid rows (ConfigError) are never spooled: the agent records them as a gap.

    Args:
        ledger: Where to write.
        run: The run's id or name (from Ledger.start_run).
        spool: Where rows go while the ledger is unavailable; None raises instead.
    """

    def __init__(self, ledger: Ledger, run: int | str, spool: Spool | None = None) -> None:
        self.ledger = ledger
        self.run = run
        self.spool = spool
        self.rows_written = 0
        self.latencies_s: deque[float] = deque(maxlen=10_000)
        """Seconds each write took (the latest 10,000), for benches and health lines."""
        self._closed = False
        self._leftovers_done = spool is None
        self._down = False
        self._spool_failing = False
        self.refused_rows = 0
        """Energy rows refused because the run was deleted from the ledger while measured."""
        self.run_deleted = False

    @property
    def unwritten_rows(self) -> int:
        """Energy rows handed to this sink that are not in the ledger (spooled or lost)."""
        return self.spool.rows + self.spool.lost_rows + self.refused_rows if self.spool is not None else 0

    def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        """Store one flush interval's rows and gaps in one transaction (or spool them).

        Raises:
            ConfigError: A row is invalid (the agent records it as a gap, never retries it).
            LedgerError: The sink is closed, or the ledger failed and there is no spool.
        """
        if self._closed:
            raise LedgerError("LedgerSink is closed: open a new one to keep writing")
        if not (intervals or gaps):
            self._catch_up()
            return
        try:
            self._catch_up()
            started = time.perf_counter()
            self.rows_written += self.ledger.record_intervals(self.run, intervals, gaps)
            self.latencies_s.append(time.perf_counter() - started)
        except LedgerError as error:
            if self.spool is None:
                raise
            if run_deleted(error, self.run):
                self._refuse(len(intervals), error)
                return
            self._spool(intervals, gaps, error)

    def _refuse(self, rows: int, error: LedgerError) -> None:
        """The run was deleted (`wattlog runs delete --force`) while measured: its rows are refused, its
        spool dropped (a spool of a run that is gone would fail replay forever); said in one line."""
        assert self.spool is not None
        dropped = self.spool.discard()
        self.refused_rows += rows + dropped
        if not self.run_deleted:
            self.run_deleted = True
            log.error(
                "run %s was deleted from the ledger while it was measured (%s): its rows are refused from "
                "now on, and the %d rows of its spool %s dropped",
                self.run,
                error,
                dropped,
                self.spool.path,
                extra=RUN_DELETED,
            )

    def describe(self) -> str:
        """One line: rows and flushes written, and the flush latency (p50, p99, max)."""
        times = sorted(self.latencies_s)
        if not times:
            return f"{self.rows_written} rows, no flushes"

        def ms(q: float) -> str:
            return f"{times[min(len(times) - 1, int(q * len(times)))] * 1000:.1f}"

        return (
            f"{self.rows_written} rows in {len(times)} flushes, "
            f"latency p50 {ms(0.5)} ms p99 {ms(0.99)} ms max {times[-1] * 1000:.1f} ms"
        )

    def write_revisions(self, revisions: Sequence[BandRevision]) -> None:
        """Store revisions of the band of rows already written (a RevisionSink), or spool them.

        They go where the rows went: spooled rows are replayed first, and revisions the ledger
        refuses follow them into the spool, so a replay stores each once, after its rows.

        Raises:
            LedgerError: The sink is closed, or the ledger failed and there is no spool (or it
                cannot be written): the agent keeps the revisions and retries.
        """
        if self._closed:
            raise LedgerError("LedgerSink is closed: open a new one to keep writing")
        if not revisions:
            return
        why = "the rows they revise are spooled"  # no second try at a ledger that just failed
        if self.spool is None or not self.spool.waiting:
            try:
                self.ledger.record_revisions(self.run, revisions)
                return
            except LedgerError as error:
                if self.spool is None:
                    raise
                if run_deleted(error, self.run):  # the rows they revise are refused too
                    return
                why = str(error)
        try:
            self.spool.append_revisions(self.run, revisions)
        except OSError as spool_error:
            raise LedgerError(f"{why}; spool {self.spool.path} not writable: {spool_error}") from spool_error

    def write_windows(self, windows: Sequence[EnergyInterval]) -> None:
        """Store the windows closed since the last flush (a :class:`wattlog.telemetry.sinks.WindowSink`)."""
        if self._closed:
            raise LedgerError("LedgerSink is closed: open a new one to keep writing")
        record_windows(self.ledger, self.run, windows)

    def close(self) -> None:
        """Replay what is spooled (a last try), release the spool; the engine stays the caller's."""
        if self._closed:
            return
        self._closed = True
        if self.spool is None:
            return
        try:
            self._catch_up()
        except LedgerError as error:
            if run_deleted(error, self.run):
                self._refuse(0, error)
                self.spool.close()
                return
            log.error(
                "%d energy rows of run %s are not in the ledger (%s): they stay in %s; "
                "run `wattlog replay` when the ledger is back",
                self.spool.rows,
                self.run,
                error,
                self.spool.path,
                extra=LEDGER_OUTAGE,
            )
        self.spool.close()

    def _catch_up(self) -> None:
        """Replay the own spool, and once per sink the spools dead processes left; raises LedgerError."""
        if self.spool is None:
            return
        if self.spool.waiting or self.spool.lost_gaps:
            written = self.spool.replay(self.ledger)
            self.rows_written += written
            log.warning("the ledger is back: %d spooled energy rows of run %s replayed", written, self.run)
            self._down = False
        if not self._leftovers_done:
            self._leftovers_done = True
            done = replay_folder(self.ledger, self.spool.folder, self.spool.ledger, skip=self.spool.path)
            if done.files:
                log.warning("replayed %d energy rows left in %d spool files", done.written, done.files)
            for line in done.rejected:
                log.error("%s", line)

    def _spool(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap], error: LedgerError) -> None:
        """Spool rows the ledger refused; a spool that cannot be written either loses them, counted.

        The loss is recorded as a gap per device (stored with the next replay) and said
        in one line per outage, not one per flush; nothing is raised, so the agent does not
        keep and retry rows that have nowhere to go.
        """
        assert self.spool is not None
        try:
            self.spool.append(self.run, intervals, gaps)
        except (OSError, ConfigError) as spool_error:
            why = (
                (spool_error.strerror or str(spool_error))
                if isinstance(spool_error, OSError)
                else str(spool_error)
            )
            self.spool.record_loss(self.run, intervals, gaps, why)
            if not self._spool_failing:
                self._spool_failing = True
                log.error(
                    "ledger unavailable (%s) and spool %s not writable (%s): energy rows of run %s are lost "
                    "until one of them is back (counted, recorded as a gap)",
                    error,
                    self.spool.path,
                    why,
                    self.run,
                    extra=SPOOL_UNWRITABLE,
                )
            return
        self._spool_failing = False
        if not self._down:  # one line per outage, not one per flush
            self._down = True
            log.error(
                "ledger unavailable (%s): energy rows of run %s are spooled to %s, replayed when it is back",
                error,
                self.run,
                self.spool.path,
                extra=LEDGER_OUTAGE,
            )
