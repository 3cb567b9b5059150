"""Open the ledger: SQLite by default, PostgreSQL by URL, migrated to the newest schema on open.

The URL comes from the caller (`--db`), else the environment variable
``WATTLOG_DB``, else the user's ledger (see :mod:`.location`). Commands that
write print :func:`describe_url` so the user knows where the data went. A
network ledger that accepts connections and never answers costs at most the
connect timeout (5 s by default), never a hang.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import NullPool, StaticPool

from wattlog.accounting.ledger.connections import Connections, with_retries
from wattlog.accounting.ledger.location import (
    ENV_VAR,
    describe_url,
    legacy_notice,
    prepare_default,
    resolve_url,
)
from wattlog.errors import LedgerError, LedgerUnavailable

__all__ = ["CONNECT_TIMEOUT_S", "ENV_VAR", "describe_url", "make_engine", "resolve_url", "upgrade"]

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
"""How long opening a network ledger may take before it is an error (a URL's own
``connect_timeout`` wins)."""
_CONNECT_TIMEOUT_ARG = {"psycopg": "connect_timeout", "psycopg2": "connect_timeout", "pg8000": "timeout"}
_noticed: set[str] = set()  # legacy ledgers already named by this process
MIGRATIONS = Path(__file__).with_name("migrations")
HEAD_REVISION = "0018"
"""The newest migration (a test keeps it in step with migrations/versions); a ledger already
there skips importing Alembic, which keeps read-only commands quick."""
_MIGRATION_LOCK_KEY = 0x5741_54_4C  # "WATL": PostgreSQL advisory lock held while migrating
_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


def make_engine(
    url: str | None = None,
    *,
    migrate: bool = True,
    create: bool = True,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    connections: Connections | None = None,
) -> Engine:
    """Open the ledger at `url` and bring its schema to the newest migration.

    Args:
        url: SQLAlchemy URL (``sqlite:///path.db``, ``postgresql+psycopg://user@host/db``);
            None means $WATTLOG_DB or the user's ledger (its folder is created, 0700).
        migrate: Run ``alembic upgrade head`` (on by default; off only for schema tests).
        create: Create a missing SQLite file; read-only commands pass False so a typo writes nothing.
        connect_timeout_s: Seconds a network ledger may take to connect (PostgreSQL's
            ``connect_timeout``, at least 2 s there; a ``connect_timeout`` in the URL wins).
        connections: A network ledger's pool and retries (None: $WATTLOG_DB_POOL, else 2 + 3 held).

    Returns:
        A SQLAlchemy engine (SQLite with foreign keys on, WAL and a busy timeout).

    Raises:
        LedgerError: The URL is malformed, the driver is missing, or the database can't be opened.
    """
    resolved = resolve_url(url)
    where = describe_url(resolved)
    try:
        parsed = make_url(resolved)
    except (ArgumentError, ValueError) as error:  # ValueError: a port that is not a number
        raise LedgerError(f"ledger URL {where!r} is malformed: use e.g. sqlite:///wattlog.db") from error
    _name_legacy(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if create:
            prepare_default(url)
        engine = _sqlite_engine(parsed.database or "", create)
    else:
        engine = _network_engine(parsed, where, connect_timeout_s, connections)
    sqlite_file = (parsed.database or "") if backend == "sqlite" else None
    try:
        # SQLite: the first opens of a new file (switching it to WAL, reading its schema) answer
        # "database is locked" at once, without the busy timeout, while another process migrates
        # it; so the whole open runs under the migration lock, one process at a time (milliseconds).
        with _file_lock(sqlite_file) as locked:
            with engine.begin() as connection:
                revision = _revision(connection)
            _check_known(revision, where)
            if migrate and revision != HEAD_REVISION:
                if not locked:
                    raise LedgerError(f"cannot lock ledger {where} to migrate it: its folder is not writable")
                _migrate(engine, where)
    except LedgerError:
        engine.dispose()
        raise
    except SQLAlchemyError as error:
        engine.dispose()
        failure = LedgerUnavailable if isinstance(error, OperationalError) else LedgerError
        raise failure(_open_failure(where, error)) from error
    return engine


def _network_engine(
    parsed: URL, where: str, connect_timeout_s: float, connections: Connections | None
) -> Engine:
    """An engine for a database server (PostgreSQL): its connect timeout, a bounded pool, retries."""
    connections = connections or Connections.from_env(os.environ)
    pool: dict[str, Any] = (
        {"pool_size": connections.pool_size, "max_overflow": connections.max_overflow}
        if connections.hold
        else {"poolclass": NullPool}
    )
    connect_args = {
        **_timeout_args(parsed, connect_timeout_s),
        **connections.driver_args(parsed.get_driver_name()),
    }
    try:
        engine = create_engine(parsed, pool_pre_ping=connections.hold, connect_args=connect_args, **pool)
    except ModuleNotFoundError as error:
        backend = parsed.get_backend_name()
        raise LedgerError(f"no driver for {backend} ({error.name}): pip install 'wattlog[pg]'") from error
    except (ArgumentError, SQLAlchemyError) as error:
        raise LedgerError(f"cannot use ledger {where}: {_first_line(error)}") from error

    @event.listens_for(engine, "do_connect")
    def _connect(dialect, _record, cargs, cparams):  # type: ignore[no-untyped-def]
        # a server that is full or starting up is asked again, with backoff, for up to retry_s
        return with_retries(lambda: dialect.connect(*cargs, **cparams), connections)

    return engine


def _timeout_args(parsed: URL, timeout_s: float) -> dict[str, object]:
    """The driver's connect-timeout argument, unless the URL sets one (whole seconds, as libpq takes)."""
    argument = _CONNECT_TIMEOUT_ARG.get(parsed.get_driver_name())
    if argument is None or argument in parsed.query:
        return {}
    return {argument: max(1, math.ceil(timeout_s))}


def _name_legacy(url: str | None) -> None:
    """Name an older wattlog's ./wattlog.db once per process when the user's ledger is used instead."""
    notice = legacy_notice(url)
    if notice is not None and notice not in _noticed:
        _noticed.add(notice)
        logger.warning("%s", notice)


def unconnected_engine(url: str | None = None) -> Engine:
    """An engine for `url` that connects only when first used (a ledger unreachable now, perhaps later).

    Its schema is not checked: writes to it may fail until the ledger is back and migrated.

    Raises:
        LedgerError: The URL is malformed or its driver is missing.
    """
    resolved = resolve_url(url)
    try:
        parsed = make_url(resolved)
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(parsed.database or "", create=False)
        return _network_engine(parsed, describe_url(resolved), CONNECT_TIMEOUT_S, None)
    except (ArgumentError, ValueError, ModuleNotFoundError, SQLAlchemyError) as error:
        raise LedgerError(f"cannot use ledger {describe_url(resolved)}: {_first_line(error)}") from error


def check_integrity(engine: Engine) -> None:
    """Refuse a damaged SQLite ledger (PRAGMA quick_check) before a run writes into it.

    SQLite reads only the pages a statement touches, so a ledger damaged in the middle
    opens, takes a run, and fails later; this reads every page once (milliseconds per MB).

    Raises:
        LedgerError: The check found damage, or could not run.
    """
    if engine.dialect.name != "sqlite":
        return
    where = describe_url(engine.url.render_as_string(hide_password=False))
    try:
        with engine.connect() as connection:
            found = [str(row[0]) for row in connection.execute(text("PRAGMA quick_check(3)"))]
    except SQLAlchemyError as error:
        raise LedgerError(_open_failure(where, error)) from error
    if found != ["ok"]:
        damage = " ".join("; ".join(found).split())[:200]  # one line, whatever SQLite put in it
        raise LedgerError(
            f"ledger {where} is damaged ({damage}): restore it from a backup or pass another --db"
        )


def _migrate(engine: Engine, where: str) -> None:
    """Upgrade under a lock, so processes starting at once on a new ledger migrate it once.

    PostgreSQL: a transaction-scoped advisory lock, taken here. SQLite: the caller
    (make_engine) holds an flock on a file beside the database. The revision is
    read again under the lock: whoever waited finds it done.
    """
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
        revision = _revision(connection)
        _check_known(revision, where)
        if revision != HEAD_REVISION:
            upgrade(connection)


@contextlib.contextmanager
def _file_lock(sqlite_file: str | None) -> Iterator[bool]:
    """An flock beside a SQLite ledger, held while the block runs; yields whether it is held.

    Nothing to lock for PostgreSQL or an in-memory database (True); a folder this user cannot
    write gives no lock (False), which is enough for reading a ledger but not for migrating it.
    """
    if not sqlite_file or sqlite_file == ":memory:":
        yield True
        return
    path = Path(sqlite_file).resolve()
    try:
        handle = open(path.with_name(path.name + ".migrate.lock"), "a")  # noqa: SIM115 (held across yield)
    except OSError:
        yield False
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def known_revisions() -> list[str]:
    """The schema revisions this wattlog ships (oldest first)."""
    return sorted(
        m.group(1) for f in (MIGRATIONS / "versions").iterdir() if (m := _REVISION_FILE.match(f.name))
    )


def _check_known(revision: str | None, where: str) -> None:
    """A ledger written by a newer wattlog is refused whole: its rows may mean something else."""
    if revision is None or revision in known_revisions():
        return
    raise LedgerError(
        f"ledger {where} has schema revision {revision}, newer than this wattlog knows "
        f"(up to {HEAD_REVISION}): upgrade wattlog (pip install -U wattlog) or pass another --db"
    )


def _open_failure(where: str, error: BaseException) -> str:
    """One line naming the ledger and what to do about it."""
    message = _first_line(error)
    if "file is not a database" in message or "malformed" in message:
        return (
            f"ledger {where} is not a readable SQLite database ({message}): restore it from a backup "
            "or pass another --db"
        )
    return f"cannot open ledger {where}: {message} (check --db or ${ENV_VAR})"


def upgrade(connection: Connection, revision: str = "head") -> None:
    """Run the Alembic migrations up to `revision` on an open connection (inside its transaction)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _revision(connection: Connection) -> str | None:
    """The ledger's schema revision, None for an empty database."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _sqlite_engine(database: str, create: bool) -> Engine:
    """A SQLite engine; a missing parent folder is an error rather than a surprise file elsewhere."""
    if database and database != ":memory:":
        if not create and not Path(database).exists():
            raise LedgerError(
                f"no ledger at {Path(database).resolve()}: pass --db, set ${ENV_VAR}, or record a run first"
            )
        parent = Path(database).resolve().parent
        if not parent.is_dir():
            where = Path(database).resolve()
            raise LedgerError(f"cannot open ledger {where}: folder {parent} does not exist")
        # SQLite's timeout is no connect timeout (opening a local file does not wait on a peer) but
        # how long a write waits for another writer's lock: agents of a node share one file, and a
        # shorter wait would spool rows that a busy moment delays, so it stays 30 s.
        engine = create_engine(f"sqlite:///{database}", connect_args={"timeout": 30})
    else:  # one shared in-memory database for every connection
        engine = create_engine("sqlite://", connect_args={"check_same_thread": False}, poolclass=StaticPool)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        if database and database != ":memory:":
            cursor.execute("PRAGMA journal_mode=WAL")  # readers (dashboards) don't block the agent
        cursor.close()

    return engine


def _first_line(error: BaseException) -> str:
    """The driver's message without SQLAlchemy's trailing links and SQL."""
    original = getattr(error, "orig", None) or error
    return (str(original).strip().splitlines() or [type(original).__name__])[0]
