"""How much work SQLite does for a call: virtual-machine steps, the database's work, not the clock."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from sqlalchemy import Engine, event


def sqlite_steps(engine: Engine, call: Callable[[], object]) -> int:
    """SQLite virtual-machine steps (in hundreds) that the statements `call` runs on `engine` take."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0  # 0: go on

    def _counted(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        raw = conn.connection.dbapi_connection
        assert isinstance(raw, sqlite3.Connection)
        raw.set_progress_handler(count, 100)

    event.listen(engine, "before_cursor_execute", _counted)
    try:
        call()
    finally:
        event.remove(engine, "before_cursor_execute", _counted)
    return steps[0]
