"""LedgerSink: the agent's flush thread writes each interval's energy into the ledger."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence

from wattlog.accounting.ledger.store import Ledger
from wattlog.errors import LedgerError
from wattlog.records import EnergyInterval, Gap


class LedgerSink:
    """An :class:`wattlog.telemetry.sinks.IntervalSink` that stores each flush in one ledger transaction.

    A crash loses at most the flush in flight; a failed write raises
    LedgerError and leaves nothing half-written, so the agent can retry.

    Args:
        ledger: Where to write.
        run: The run's id or name (from Ledger.start_run).
    """

    def __init__(self, ledger: Ledger, run: int | str) -> None:
        self.ledger = ledger
        self.run = run
        self.rows_written = 0
        self.latencies_s: deque[float] = deque(maxlen=10_000)
        """Seconds each write took (the latest 10,000), for benches and health lines."""
        self._closed = False

    def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        """Store one flush interval's rows and gaps in one transaction."""
        if self._closed:
            raise LedgerError("LedgerSink is closed: open a new one to keep writing")
        if intervals or gaps:
            started = time.perf_counter()
            self.rows_written += self.ledger.record_intervals(self.run, intervals, gaps)
            self.latencies_s.append(time.perf_counter() - started)

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

    def close(self) -> None:
        """Stop accepting rows (the engine belongs to the caller and stays open)."""
        self._closed = True
