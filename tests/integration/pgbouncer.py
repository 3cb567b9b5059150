"""Start a throwaway pgbouncer in transaction mode in front of a test PostgreSQL (loopback, free port).

pgbouncer refuses to run as root, so as root it runs as the `postgres` user,
like the server, with its config, log and pid in a fresh temporary folder.
Clients connect with trust auth as `postgres`; every database name is passed
through to the server (`* = host=... port=...`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.integration.postgres import PostgresServer, _as_postgres, _free_port
from tests.waiting import wait_until

BINARY = Path(os.environ.get("WATTLOG_PGBOUNCER", "/usr/sbin/pgbouncer"))


def available() -> bool:
    """Whether the pgbouncer binary is installed (`apt-get install pgbouncer`)."""
    return BINARY.is_file()


@contextmanager
def running_pgbouncer(
    server: PostgresServer, *, pool_size: int = 4, max_clients: int = 2000
) -> Iterator[PostgresServer]:
    """pgbouncer (pool_mode=transaction) before `server`; yields its address, with the server's data dir.

    Args:
        server: The PostgreSQL behind it.
        pool_size: Server connections per (database, user): what the server sees at most.
        max_clients: Client connections pgbouncer accepts.

    Raises:
        RuntimeError: pgbouncer exited or did not listen within 10 s (its log is in the message).
    """
    root = Path(tempfile.mkdtemp(prefix="wattlog-pgbouncer-"))
    port = _free_port()
    (root / "users.txt").write_text('"postgres" ""\n')
    (root / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={server.host} port={server.port}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {root / 'users.txt'}\n"
        "pool_mode = transaction\n"
        f"default_pool_size = {pool_size}\nmax_client_conn = {max_clients}\n"
        f"logfile = {root / 'log'}\npidfile = {root / 'pid'}\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
    )
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        for path in root.iterdir():
            shutil.chown(path, "postgres", "postgres")
    # its log goes to the logfile and to stderr: into a pipe nobody reads, a busy pgbouncer would fill
    # it (64 KiB) and block on the write, every client with it
    process = subprocess.Popen(
        _as_postgres([str(BINARY), str(root / "pgbouncer.ini")]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, process, root)
        yield PostgresServer(host="127.0.0.1", port=port, data_dir=server.data_dir)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(root, ignore_errors=True)


def _wait_listening(port: int, process: subprocess.Popen[bytes], root: Path) -> None:
    def failure() -> str:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        return f"pgbouncer did not start (exit {process.poll()}): {log[-500:]}"

    def listening() -> bool:
        if process.poll() is not None:
            raise RuntimeError(failure())
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until(listening, 10.0, failure, poll_s=0.05)
    except AssertionError as error:
        raise RuntimeError(str(error)) from None
