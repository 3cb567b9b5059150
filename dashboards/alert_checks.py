"""Checks of a webhook payload's fields, and of what the ledger can never store of an alert.

Field checks (labels, RFC 3339 times) refuse a malformed payload with a 400.

A webhook batch is retried whole by Alertmanager on a 5xx, so an alert that
can never be stored (PostgreSQL refuses a NUL byte in text, and names longer
than their columns) would block the valid alerts of its batch forever. Such
an alert is found here and rejected alone, with its reason.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

NAME_CHARS = 200
"""The ledger's run-name and host columns."""


class PayloadError(ValueError):
    """The request is refused; `status` is the HTTP status to answer (4xx)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def time_s_of(text: Any, what: str) -> float:
    """Unix seconds of an RFC 3339 time; Alertmanager sends nanoseconds, Python parses microseconds."""
    if not isinstance(text, str):
        raise PayloadError(400, f"{what} must be an RFC 3339 string")
    head, dot, tail = text.partition(".")
    if dot:  # keep 6 fractional digits, then the zone
        digits = len(tail) - len(tail.lstrip("0123456789"))
        text = f"{head}.{tail[: min(digits, 6)]}{tail[digits:]}"
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError as error:
        raise PayloadError(400, f"{what} {text!r} is not an RFC 3339 time") from error


def labels_of(value: Any, what: str) -> dict[str, str]:
    """`value` as labels (an object of strings); PayloadError(400) if it is not."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise PayloadError(400, f"{what} must be an object of strings")
    return value


def unstorable(run: str, name: str, host: str, payload: Any) -> str:
    """Why the ledger could never store an alert ("" if it can).

    Args:
        run: The run its labels name ("" if none).
        name: Its alertname.
        host: The host it is attributed to when its run is unknown.
        payload: The event payload (labels, annotations, ...).
    """
    if any("\x00" in text for text in (run, name, *_strings(payload))):
        return "a label or annotation holds a NUL byte, which the ledger cannot store"
    if len(run) > NAME_CHARS:
        return f"its run label is {len(run)} characters, over the ledger's {NAME_CHARS}"
    if len(host) > NAME_CHARS:
        return f"its host label is {len(host)} characters, over the ledger's {NAME_CHARS}"
    return ""


def _strings(value: Any) -> list[str]:
    """Every key and string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for k, v in value.items() for text in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [text for v in value for text in _strings(v)]
    return []
