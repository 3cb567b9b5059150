"""Where the agent sends flushed energy: the ledger, a file, a test's list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from telemetry.types import EnergyInterval, Gap


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
