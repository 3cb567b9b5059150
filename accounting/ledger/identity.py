"""Which ledger a writer writes to, checked at every write: a ledger deleted or replaced is an outage.

On 38e5f82 the SQLite ledger file deleted during a run went on taking every flush (into the
unlinked file, through the connection the engine kept), the run ended "all recorded", exit 0,
and all of its energy was gone. A writer now pins the ledger's identity when it starts
(:func:`guard_identity`) and every later transaction on that engine checks it, at its begin
and again before its commit:

- SQLite: the file's device and inode (a deleted file is gone or another file, a copy put in
  its place is another inode);
- PostgreSQL: the server's system identifier (``pg_control_system()``, where the role may read
  it) and the database's oid (a database dropped and created again under its name is another).

A changed identity raises :class:`LedgerReplaced`, a :class:`~wattlog.errors.LedgerUnavailable`,
before anything is committed: the writers spool as in any outage, say it in one line, and exit
75; nothing is ever "recorded" into a ledger that is not the one the run started in.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from wattlog.errors import LedgerUnavailable

log = logging.getLogger(__name__)

PG_CHECK_EVERY_S = 1.0
"""A network ledger's identity costs a query: checked at most this often (a flush is ~10 s apart)."""


class LedgerReplaced(LedgerUnavailable):
    """The ledger this process started writing to is gone or another one now (deleted, replaced).

    Attributes:
        was: The identity pinned at the start.
        now: The identity found (None: the ledger is gone).
    """

    def __init__(self, message: str, was: LedgerIdentity, now: LedgerIdentity | None) -> None:
        super().__init__(message)
        self.was = was
        self.now = now


@dataclass(frozen=True, slots=True)
class LedgerIdentity:
    """What tells one ledger from another at the same URL.

    Attributes:
        kind: "sqlite" or "postgresql".
        key: SQLite: (device, inode) of the file; PostgreSQL: (system identifier, database oid).
        where: The file or the database, for the message.
    """

    kind: str
    key: tuple[int | str | None, ...]
    where: str

    def describe(self) -> str:
        """ "file /x/l.db (device 2049, inode 1234)" or "database wattlog (system 7…, oid 16384)"."""
        a, b = self.key
        if self.kind == "sqlite":
            return f"file {self.where} (device {a}, inode {b})"
        return f"database {self.where} (system {a or '?'}, oid {b})"


def sqlite_identity(path: str) -> LedgerIdentity | None:
    """The identity of the SQLite file at `path` (None: no such file)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return LedgerIdentity("sqlite", (st.st_dev, st.st_ino), path)


def postgres_identity(connection: Any) -> LedgerIdentity:
    """The identity of the PostgreSQL database a DBAPI connection is on."""
    cursor = connection.cursor()
    try:
        cursor.execute("SELECT oid, datname FROM pg_database WHERE datname = current_database()")
        oid, name = cursor.fetchone()
        system: str | None = None
        try:  # readable by default; a role denied it is still checked by the database's oid
            cursor.execute("SAVEPOINT wattlog_identity")
            cursor.execute("SELECT system_identifier FROM pg_control_system()")
            system = str(cursor.fetchone()[0])
            cursor.execute("RELEASE SAVEPOINT wattlog_identity")
        except Exception:  # noqa: BLE001 - any refusal of the function leaves the oid
            cursor.execute("ROLLBACK TO SAVEPOINT wattlog_identity")
        return LedgerIdentity("postgresql", (system, int(oid)), str(name))
    finally:
        cursor.close()


class IdentityGuard:
    """Pins an engine's ledger identity and checks it at each transaction's begin and commit.

    Args:
        engine: The writer's engine (SQLite file or PostgreSQL).
        clock: Monotonic seconds (PostgreSQL checks at most every PG_CHECK_EVERY_S).
    """

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.pinned: LedgerIdentity | None = None
        self._clock = clock
        self._checked_s = -1e18
        backend = engine.url.get_backend_name()
        database = engine.url.database or ""
        self._sqlite = database if backend == "sqlite" and database not in ("", ":memory:") else None
        self._postgres = backend == "postgresql"

    def pin(self) -> IdentityGuard:
        """Read the identity now and check it from now on (nothing to pin for an in-memory ledger).

        A ledger unreachable now (a writer starting during an outage) is pinned at the first
        transaction that reaches it.
        """
        if self._sqlite is None and not self._postgres:
            return self
        try:
            if self._sqlite is not None:
                self.pinned = sqlite_identity(self._sqlite)
            else:
                with self.engine.connect() as connection:
                    self.pinned = postgres_identity(connection.connection.dbapi_connection)
                self._checked_s = self._clock()
        except SQLAlchemyError as error:
            log.debug("the ledger's identity is pinned at its first transaction: %s", error)
        event.listen(self.engine, "begin", self._check)
        event.listen(self.engine, "commit", self._check)
        return self

    def release(self) -> None:
        """Stop checking (the writer closed)."""
        if event.contains(self.engine, "begin", self._check):
            event.remove(self.engine, "begin", self._check)
            event.remove(self.engine, "commit", self._check)

    def _check(self, connection: Connection) -> None:
        if self._sqlite is not None:
            now = sqlite_identity(self._sqlite)
        else:
            now_s = self._clock()
            if now_s - self._checked_s < PG_CHECK_EVERY_S:
                return
            now = postgres_identity(connection.connection.dbapi_connection)
            self._checked_s = now_s
        pinned = self.pinned
        if pinned is None:  # unreachable at the start: this is the ledger the run writes to
            self.pinned = now
            return
        if now == pinned:
            return
        what = "is gone" if now is None else f"is another one now: {now.describe()}"
        raise LedgerReplaced(
            f"the ledger this run started in ({pinned.describe()}) {what}: deleted or replaced during "
            "the run, so nothing more is written to it",
            pinned,
            now,
        )


def identity_of(engine: Engine) -> LedgerIdentity | None:
    """The identity of the ledger `engine` is on now (None: in memory, or no such file yet).

    Raises:
        SQLAlchemyError: PostgreSQL cannot be reached.
    """
    backend, database = engine.url.get_backend_name(), engine.url.database or ""
    if backend == "sqlite":
        return sqlite_identity(database) if database not in ("", ":memory:") else None
    if backend != "postgresql":
        return None
    with engine.connect() as connection:
        return postgres_identity(connection.connection.dbapi_connection)


def guard_identity(engine: Engine) -> IdentityGuard:
    """Pin `engine`'s ledger identity: each later transaction on it raises LedgerReplaced if it changed.

    A ledger unreachable now is pinned at the first transaction that reaches it.
    """
    return IdentityGuard(engine).pin()
