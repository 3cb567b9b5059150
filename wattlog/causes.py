"""One line per cause: log records that report a consequence of one outage name it, the CLI shows the first.

A PostgreSQL outage during `wattlog run` printed 11 lines on 38e5f82 (the start spooled,
the rows spooled, an event spooled, the rows left in the spool, the run left in the spool,
the figures not shown...), all of one cause. Each such record now carries the cause in
``extra=`` (:data:`LEDGER_OUTAGE`), and the CLI's handlers pass only the first record of
each cause (:func:`one_line_per_cause`); the run's verdict line says what it all left undone::

    log.error("ledger unavailable (%s): rows spooled to %s", error, path, extra=LEDGER_OUTAGE)
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

CAUSE: Final = "wattlog_cause"
"""The LogRecord attribute naming the cause a record reports."""
LEDGER_OUTAGE: Final = {CAUSE: "the ledger is unavailable"}
"""``extra=`` of a record reporting a consequence of the ledger being down, full or replaced."""
RUN_DELETED: Final = {CAUSE: "the run was deleted from the ledger"}
"""``extra=`` of a record reporting a consequence of the run deleted (forced) while it was written."""
SPOOL_UNWRITABLE: Final = {CAUSE: "the spool cannot be written"}
"""``extra=`` of a record reporting a consequence of the spool's disk being full or read-only."""


class OneLinePerCause(logging.Filter):
    """Passes every record without a cause, and the first record of each cause.

    >>> keep = OneLinePerCause()
    >>> def rec(cause):
    ...     r = logging.LogRecord("x", logging.ERROR, "", 0, "m", None, None)
    ...     if cause:
    ...         setattr(r, CAUSE, cause)
    ...     return r
    >>> [keep.filter(rec(c)) for c in ("down", None, "down", "full")]
    [True, True, False, True]
    """

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether `record` is shown (the later records of a cause already shown are not)."""
        cause = getattr(record, CAUSE, None)
        if cause is None:
            return True
        if cause in self._seen:
            return False
        self._seen.add(str(cause))
        return True


@contextmanager
def one_line_per_cause(logger: logging.Logger | None = None) -> Iterator[OneLinePerCause]:
    """Filter `logger`'s handlers (default: the root's) with one fresh OneLinePerCause while inside."""
    handlers = list((logger or logging.getLogger()).handlers)
    once = OneLinePerCause()
    for handler in handlers:
        handler.addFilter(once)
    try:
        yield once
    finally:
        for handler in handlers:
            handler.removeFilter(once)
