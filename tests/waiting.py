"""One way for a test to wait for something another thread or process does: poll until it holds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


def wait_until(
    ready: Callable[[], _T], timeout_s: float, failure: str | Callable[[], str], poll_s: float = 0.02
) -> _T:
    """Return what `ready()` gave once it is true, polling every `poll_s`; fail with `failure` (a
    message, or what gives one when it is needed: a log read at the time) after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not (value := ready()):
        if time.monotonic() >= deadline:
            raise AssertionError(failure() if callable(failure) else failure)
        time.sleep(poll_s)
    return value
