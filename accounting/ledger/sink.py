"""LedgerSink: the agent's flush thread writes each interval's energy into the ledger."""

from __future__ import annotations

from collections.abc import Sequence

from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.windows import record_windows
from wattlog.errors import LedgerError
from wattlog.records import EnergyInterval, Gap, WindowEnergy


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
        self._closed = False

    def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        """Store one flush interval's rows and gaps in one transaction."""
        if self._closed:
            raise LedgerError("LedgerSink is closed: open a new one to keep writing")
        if intervals or gaps:
            self.rows_written += self.ledger.record_intervals(self.run, intervals, gaps)

    def write_windows(self, windows: Sequence[WindowEnergy]) -> None:
        """Store the windows closed since the last flush (a :class:`wattlog.telemetry.sinks.WindowSink`)."""
        if self._closed:
            raise LedgerError("LedgerSink is closed: open a new one to keep writing")
        record_windows(self.ledger, self.run, windows)

    def close(self) -> None:
        """Stop accepting rows (the engine belongs to the caller and stays open)."""
        self._closed = True
