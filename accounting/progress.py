"""Progress of a long command on stderr: a line when a step starts, and every few seconds within one."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

Progress = Callable[[str, int], None]
"""Hears what a long command is doing and how far it is, e.g. ("coding rows", rows so far) or
("compressing", bytes to compress)."""


def progress_lines(
    command: str, every_s: float = 2.0, in_bytes: tuple[str, ...] = (), quiet_s: float = 0.0
) -> Progress:
    """A `Progress` that prints "wattlog COMMAND: STEP: COUNT" when STEP starts and every `every_s`;
    nothing in the first `quiet_s` (a command that is quick says nothing)."""
    start = last = time.monotonic()
    step = ""

    def tell(doing: str, count: int) -> None:
        nonlocal last, step
        if time.monotonic() - start < quiet_s:
            return
        if doing != step or time.monotonic() - last >= every_s:
            last, step = time.monotonic(), doing
            amount = f"{count / 1e6:,.1f} MB" if doing in in_bytes else f"{count:,}"
            print(f"wattlog {command}: {doing}: {amount}", file=sys.stderr, flush=True)

    return tell
