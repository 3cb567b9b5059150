"""The soak's ledgers and the faults each can suffer (bench/soak.py draws among `faults`).

SQLite: the file is moved away and back. PostgreSQL (a throwaway server): restarted, made
full (every connection slot of the agents' role taken), or stopped for a while.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from wattlog.accounting.ledger import make_engine

if TYPE_CHECKING:
    import psycopg

    from tests.integration.postgres import PostgresServer

ROLE = "soak_agent"
SLOTS = 6
"""Connections the agents' role may hold (2 agents; each holds one between flushes, or none)."""


class SoakLedger(Protocol):
    """A ledger the soak's agents write to, and the outages it can be put through."""

    url: str
    folder: Path
    faults: tuple[str, ...]

    def out(self) -> contextlib.AbstractContextManager[None]:
        """The ledger unreachable while inside."""
        ...

    def restart(self) -> None:
        """Restart the server (PostgreSQL only)."""
        ...

    def full(self) -> contextlib.AbstractContextManager[int]:
        """Every connection slot taken while inside (PostgreSQL only); yields how many."""
        ...


class SqliteLedger:
    """A SQLite file in `folder`, created and migrated before any agent opens it."""

    faults = ("ledger moved", "spool disk full", "sigstop")

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / "ledger.db"
        self.url = f"sqlite:///{self.path}"
        make_engine(self.url).dispose()

    @contextmanager
    def out(self) -> Iterator[None]:
        """The file renamed away while inside (its identity check makes that an outage)."""
        moved = self.path.with_name("moved.db")
        self.path.rename(moved)
        try:
            yield
        finally:
            moved.rename(self.path)

    def restart(self) -> None:
        """Nothing to restart."""
        raise NotImplementedError("a SQLite ledger has no server")

    @contextmanager
    def full(self) -> Iterator[int]:
        """Nothing to fill."""
        raise NotImplementedError("a SQLite ledger has no connection slots")
        yield 0  # pragma: no cover


class PostgresLedger:
    """A database on `server` owned by a role of SLOTS connections, which the agents log in as."""

    faults = ("postgres restarted", "postgres full", "spool disk full", "sigstop")

    def __init__(self, server: PostgresServer, folder: Path) -> None:
        import psycopg

        self.server, self.folder = server, folder
        self._admin = f"host={server.host} port={server.port} user=postgres dbname=postgres"
        with psycopg.connect(self._admin, autocommit=True) as admin:
            admin.execute(f"CREATE ROLE {ROLE} LOGIN CONNECTION LIMIT {SLOTS}")
            admin.execute(f"CREATE DATABASE soak OWNER {ROLE}")
        self.url = f"postgresql+psycopg://{ROLE}@{server.host}:{server.port}/soak"
        self._agent = f"host={server.host} port={server.port} user={ROLE} dbname=soak"
        make_engine(self.url).dispose()

    def _pg_ctl(self, *args: str) -> None:
        from tests.integration.postgres import BIN, server_options

        command = [str(BIN / "pg_ctl"), "-D", str(self.server.data_dir), *args]
        if "stop" not in args:
            command[3:3] = ["-o", server_options(self.server.port)]
        if os.geteuid() == 0:  # initdb refused root: the server runs as postgres
            command = ["runuser", "-u", "postgres", "--", *command]
        # no pipes: a server started here would hold them open (its output goes to its -l log)
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=60)

    def restart(self) -> None:
        """pg_ctl restart -m fast (every session ended, the server back in a second or two)."""
        self._pg_ctl("-m", "fast", "-w", "-l", str(self.server.data_dir.parent / "log"), "restart")

    @contextmanager
    def out(self) -> Iterator[None]:
        """The server stopped while inside."""
        self._pg_ctl("-m", "fast", "-w", "stop")
        try:
            yield
        finally:
            self._pg_ctl("-w", "-l", str(self.server.data_dir.parent / "log"), "start")  # its own folder

    @contextmanager
    def full(self) -> Iterator[int]:
        """The role's SLOTS taken by the soak (the agents' sessions ended until the soak holds them all)."""
        import psycopg

        held: list[psycopg.Connection] = []
        deadline_s = time.monotonic() + 15.0
        try:
            with psycopg.connect(self._admin, autocommit=True) as admin:
                while len(held) < SLOTS and time.monotonic() < deadline_s:
                    ours = [c.info.backend_pid for c in held]
                    admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE usename = %s AND NOT pid = ANY(%s)",
                        (ROLE, ours),
                    )
                    try:
                        held.append(psycopg.connect(self._agent))
                    except psycopg.OperationalError:
                        time.sleep(0.05)  # an agent took the slot first: end its session again
            yield len(held)
        finally:
            for connection in held:
                connection.close()
