"""Checks for the numbers users type: finite, in range, or one line naming the option and the fix.

Every CLI number goes through :func:`check_number` (and config dataclasses use
it in ``__post_init__``), so ``--seconds nan``, ``--flush-s inf`` or
``--port 99999`` fail before anything starts, with a ConfigError the CLI prints
as one line (exit 2), never a traceback.
"""

from __future__ import annotations

import math

from wattlog.errors import ConfigError

MAX_SIMULATED_GPUS = 1024
"""More simulated GPUs than a large node has is a typo, not a test (each is sampled every tick)."""


def check_number(
    name: str,
    value: float,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    hint: str = "",
) -> float:
    """Return `value` if it is finite and within [low, high] (low excluded with `low_open`).

    Args:
        name: The option as the user wrote it, e.g. "--seconds".
        value: The number given.
        low: Smallest allowed value (None: no lower bound).
        high: Largest allowed value (None: no upper bound but finiteness).
        low_open: Whether `low` itself is refused (e.g. a duration must be > 0).
        hint: A suggestion appended to the message, e.g. "try 10".

    Raises:
        ConfigError: Not a finite number, or out of range.
    """
    suffix = f"; {hint}" if hint else ""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {value!r}{suffix}")
    below = low is not None and (value <= low if low_open else value < low)
    if below or (high is not None and value > high):
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"<= {high:g}"
        bounds = " and ".join(part for part in (lo, hi) if part)
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        raise ConfigError(f"{name} must be {bounds}, got {shown}{suffix}")
    return value


def check_port(name: str, port: int, *, allow_none: int | None = None) -> int:
    """A TCP port 0..65535 (0: any free port); `allow_none` is a sentinel also accepted (e.g. -1)."""
    if allow_none is not None and port == allow_none:
        return port
    check_number(name, port, low=0, high=65535, hint="0 picks any free port")
    return port
