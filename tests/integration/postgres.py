"""Start a throwaway PostgreSQL 15 on 127.0.0.1 (for the ledger tests and bench/ingest.py).

initdb refuses to run as root, so when we are root the server runs as the
`postgres` user in a fresh temporary folder it owns. initdb's exit code is
checked: pg_ctl would happily start an old cluster left in a reused folder.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BIN = Path(os.environ.get("WATTLOG_PG_BIN", "/usr/lib/postgresql/15/bin"))


@dataclass(frozen=True, slots=True)
class PostgresServer:
    """A running server: connect with `url(database)` (user postgres, trust auth, loopback)."""

    host: str
    port: int
    data_dir: Path

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL of `database` on this server."""
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/{database}"

    def create_database(self, prefix: str = "wattlog") -> str:
        """Create an empty database and return its SQLAlchemy URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(
            f"host={self.host} port={self.port} user=postgres dbname=postgres", autocommit=True
        ) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def available() -> bool:
    """Whether the PostgreSQL binaries are installed."""
    return (BIN / "initdb").is_file() and (BIN / "pg_ctl").is_file()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def server_options(port: int) -> str:
    """The server's options (pg_ctl -o): loopback TCP only, no Unix socket. A socket's path is capped
    at 107 bytes, and under a long TMPDIR (a CI's, 120 characters) the server refused to start."""
    return f"-c listen_addresses=127.0.0.1 -p {port} -k '' -c fsync=off"


@contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """Init a cluster in a fresh temp folder, start it on a free loopback port, stop and delete it after.

    Raises:
        RuntimeError: initdb or pg_ctl failed (their output is in the message).
    """
    root = Path(tempfile.mkdtemp(prefix="wattlog-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    root.chmod(0o755)
    port = _free_port()
    try:
        init = subprocess.run(
            _as_postgres(
                [
                    str(BIN / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),
            capture_output=True,
            text=True,
            check=False,
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed ({init.returncode}): {init.stderr.strip()}")
        options = server_options(port)
        start = subprocess.run(
            _as_postgres(
                [
                    str(BIN / "pg_ctl"),
                    "-D",
                    str(data),
                    "-o",
                    options,
                    "-l",
                    str(root / "log"),
                    "-w",
                    "-t",
                    "30",
                    "start",
                ]
            ),
            capture_output=True,
            text=True,
            check=False,
        )
        if start.returncode != 0:
            log = (root / "log").read_text() if (root / "log").exists() else ""
            raise RuntimeError(
                f"pg_ctl start failed ({start.returncode}): {start.stderr.strip()} {log[-500:]}"
            )
        try:
            yield PostgresServer(host="127.0.0.1", port=port, data_dir=data)
        finally:
            subprocess.run(
                _as_postgres([str(BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                capture_output=True,
                check=False,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
