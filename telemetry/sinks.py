"""Where the agent sends flushed energy: the ledger, a file, a test's list."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Protocol, runtime_checkable

from wattlog.records import EnergyInterval, Gap, WindowEnergy


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

    def write_windows(self, windows: Sequence[WindowEnergy]) -> None:
        """Store the rows of the windows closed since the last flush (one per window and device)."""
        ...


class JsonlSink:
    """Appends each flush's rows to a JSON Lines file (for `wattlog agent --jsonl`, no database needed).

    One object per line: ``{"type": "interval", ...EnergyInterval fields}``,
    ``{"type": "gap", ...Gap fields}`` or ``{"type": "window", ...WindowEnergy fields}``;
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
        lines = [json.dumps({"type": "interval", **asdict(row)}) for row in intervals]
        lines += [json.dumps({"type": "gap", **asdict(gap)}) for gap in gaps]
        self._append(lines)

    def _append(self, lines: list[str]) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write("".join(line + "\n" for line in lines))
        self._file.flush()
        os.fsync(self._file.fileno())

    def write_windows(self, windows: Sequence[WindowEnergy]) -> None:
        """Append the window rows (``{"type": "window", ...}``) and make them durable."""
        self._append([json.dumps({"type": "window", **asdict(row)}) for row in windows])

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None
