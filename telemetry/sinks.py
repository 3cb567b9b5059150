"""Where the agent sends flushed energy: the ledger, a file, a test's list."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Protocol, TypeVar, runtime_checkable

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from wattlog.gap_reasons import GapReason
from wattlog.metric_names import MetricName
from wattlog.records import BandRevision, EnergyInterval, Gap

logger = logging.getLogger(__name__)

INCOMPLETE_EXIT = 75
"""Exit code of a command whose work succeeded but whose energy rows are not all stored
(EX_TEMPFAIL: spooled rows are stored by `wattlog replay` once the ledger is back)."""


class IntervalSink(Protocol):
    """Receives each flush interval's energy rows and the gaps recorded in it.

    `write` is called from the agent's flush thread (never the sampler's), once
    per flush interval; a sink writes a call's rows in one transaction, so a
    crash loses at most the interval in flight.
    """

    def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        """Store one flush interval's rows."""
        ...

    def close(self) -> None:
        """Flush and release resources."""
        ...


@runtime_checkable
class WindowSink(Protocol):
    """A sink that also stores measurement windows (`with agent.window("eval"):`), at each flush."""

    def write_windows(self, windows: Sequence[EnergyInterval]) -> None:
        """Store the rows of the windows closed since the last flush (one per window and device)."""
        ...


@runtime_checkable
class RevisionSink(Protocol):
    """A sink that also stores revisions of the band of rows it holds (wattlog.records.BandRevision)."""

    def write_revisions(self, revisions: Sequence[BandRevision]) -> None:
        """Store the revisions the agent recorded since the last flush (after their rows)."""
        ...


class JsonlSink:
    """Appends each flush's rows to a JSON Lines file (for `wattlog agent --jsonl`, no database needed).

    One object per line: ``{"type": "interval", ...EnergyInterval fields}``,
    ``{"type": "gap", ...Gap fields}`` or ``{"type": "window", ...EnergyInterval fields, name, parent}``;
    every interval and window carries its source label.
    Each write is flushed and fsynced, so a killed run keeps every finished interval.

    Args:
        path: The file; created (with its folder) on the first write, appended to after.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None

    def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        """Append the rows and make them durable."""
        lines = [json.dumps({"type": "interval", **row.as_dict()}) for row in intervals]
        lines += [json.dumps({"type": "gap", **asdict(gap)}) for gap in gaps]
        self._append(lines)

    def _append(self, lines: list[str]) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write("".join(line + "\n" for line in lines))
        self._file.flush()
        os.fsync(self._file.fileno())

    def write_windows(self, windows: Sequence[EnergyInterval]) -> None:
        """Append the window rows (``{"type": "window", ...}``) and make them durable."""
        self._append([json.dumps({"type": "window", **row.as_dict()}) for row in windows])

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None


MAX_PENDING_ROWS = 100_000
"""Rows kept per sink while it keeps failing (a day of 8 devices at 10 s flushes); older ones are dropped."""


def bound_pending(rows: list) -> int:  # type: ignore[type-arg]
    """Drop the oldest of a failing sink's kept rows past MAX_PENDING_ROWS (logged); returns how many."""
    if len(rows) <= MAX_PENDING_ROWS:
        return 0
    dropped = len(rows) - MAX_PENDING_ROWS
    del rows[:dropped]
    logger.error("a sink kept failing: dropped its %d oldest rows", dropped)
    return dropped


_Kept = TypeVar("_Kept")


def hand_over(
    pending: list[_Kept], write: Callable[[Sequence[_Kept]], None] | None, what: str
) -> list[_Kept]:
    """Hand a sink's kept `pending` items to `write` (None: not now); what is still kept afterwards.

    A write that raises keeps them all for the next flush: a broken sink must not stop measuring.
    """
    if not pending or write is None:
        return pending
    try:
        write(pending)
    except Exception:  # retried next flush
        logger.exception("sink failed on %d %s; kept for the next flush", len(pending), what)
        bound_pending(pending)
        return pending
    return []


@dataclass
class SinkStats:
    """What the agent's sinks did with the rows handed to them (counted on the flush thread)."""

    written_rows: int = 0
    """Energy rows sinks accepted."""
    rejected_rows: int = 0
    """Rows a sink refused as invalid: recorded as gaps, never handed to it again."""
    dropped_rows: int = 0
    """Rows and gaps dropped because a failing sink's retry buffer was full."""
    failures: int = 0
    """Flushes in which a sink raised (its rows kept for the next flush)."""


def write_or_reject(
    sink: IntervalSink, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap], stats: SinkStats
) -> None:
    """Write to `sink`; rows it refuses as invalid (ValueError) become gaps instead of being retried.

    A refused batch is retried row by row, so one bad row does not take the
    good ones with it; each refused row is replaced by a gap over its
    interval naming the reason, and counted in ``stats.rejected_rows``.

    Raises:
        Exception: Whatever else the sink raises (the caller keeps the rows and retries).
    """
    try:
        sink.write(intervals, gaps)
    except ValueError as error:
        refused: list[Gap] = []
        for row in intervals:
            try:
                sink.write([row], [])
            except ValueError as why:
                reason = GapReason.NOT_STORED.recorded(f"rejected as invalid by {type(sink).__name__}: {why}")
                refused.append(Gap(row.host, row.device, row.start_s, row.end_s, reason))
        try:
            sink.write([], [*gaps, *refused])
        except ValueError:
            stats.dropped_rows += len(gaps)
        stats.rejected_rows += len(refused)
        stats.written_rows += len(intervals) - len(refused)
        logger.error(
            "%s refused %d energy rows as invalid (%s): recorded as gaps, not retried",
            type(sink).__name__,
            len(refused),
            error,
        )
    else:
        stats.written_rows += len(intervals)


class SinkCollector(Collector):
    """The agent's bookkeeping of its sinks, as counters.

    Emits::

        # HELP wattlog_sink_rows_total Energy rows the sinks accepted.
        # TYPE wattlog_sink_rows_total counter
        # HELP wattlog_sink_rejected_rows_total Rows a sink refused as invalid (as gaps).
        # TYPE wattlog_sink_rejected_rows_total counter
        # HELP wattlog_sink_dropped_rows_total Rows dropped from a full retry buffer.
        # TYPE wattlog_sink_dropped_rows_total counter
        # HELP wattlog_sink_failures_total Flushes in which a sink failed (rows kept).
        # TYPE wattlog_sink_failures_total counter
    """

    def __init__(self, stats: SinkStats, host: str, run: str = "") -> None:
        self._stats = stats
        self._labels = [host, run]

    def collect(self) -> Iterator[CounterMetricFamily]:
        """Yield the four counters, labelled with the host and run (as every agent series)."""
        s = self._stats
        for name, doc, value in (
            (MetricName.SINK_ROWS_TOTAL, "Energy rows the sinks accepted.", s.written_rows),
            (
                MetricName.SINK_REJECTED_ROWS_TOTAL,
                "Rows a sink refused as invalid (as gaps).",
                s.rejected_rows,
            ),
            (MetricName.SINK_DROPPED_ROWS_TOTAL, "Rows dropped from a full retry buffer.", s.dropped_rows),
            (MetricName.SINK_FAILURES_TOTAL, "Flushes in which a sink failed (rows kept).", s.failures),
        ):
            family = CounterMetricFamily(name, doc, labels=["host", "run"])
            family.add_metric(self._labels, float(value))
            yield family
