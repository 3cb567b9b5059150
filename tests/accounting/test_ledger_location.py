"""Where the ledger is (one per user, $WATTLOG_DB overrides, an old ./wattlog.db named); connect timeouts."""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattlog.accounting.ledger import engine as engine_module
from wattlog.accounting.ledger import ledger_line, make_engine
from wattlog.accounting.ledger.location import default_path, legacy_notice, resolve_url
from wattlog.cli import main
from wattlog.errors import LedgerError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home with no $XDG_DATA_HOME and no $WATTLOG_DB, standing in a folder of its own."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("WATTLOG_DB", raising=False)
    work = tmp_path / "project"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path / "home"


def test_the_default_ledger_is_the_users_whatever_the_folder(home: Path, tmp_path: Path) -> None:
    assert default_path() == home / ".local" / "share" / "wattlog-ledger" / "wattlog.db"
    assert default_path({"XDG_DATA_HOME": "/x"}) == Path("/x/wattlog-ledger/wattlog.db")
    assert resolve_url(None, {"WATTLOG_DB": "sqlite:///env.db", "HOME": "/h"}) == "sqlite:///env.db"
    assert resolve_url("sqlite:///a.db") == "sqlite:///a.db"
    make_engine().dispose()  # used to create ./wattlog.db in whatever folder the run started in
    assert default_path().is_file()
    assert not (tmp_path / "project" / "wattlog.db").exists()
    folder = default_path().parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert str(default_path()) in ledger_line()


def test_a_read_only_command_creates_no_ledger(home: Path) -> None:
    with pytest.raises(LedgerError, match="no ledger at"):
        make_engine(create=False)
    assert not default_path().parent.exists()


def test_an_older_ledger_here_is_named_once_and_not_used(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(engine_module, "_noticed", set())
    old = tmp_path / "project" / "wattlog.db"
    make_engine(f"sqlite:///{old}").dispose()
    with caplog.at_level(logging.WARNING):
        make_engine().dispose()
        make_engine().dispose()
    notices = [r.getMessage() for r in caplog.records if "older wattlog" in r.getMessage()]
    assert len(notices) == 1
    assert str(old) in notices[0] and str(default_path()) in notices[0]
    assert legacy_notice(f"sqlite:///{old}") is None  # chosen explicitly: nothing to say
    monkeypatch.setenv("WATTLOG_DB", f"sqlite:///{old}")
    assert legacy_notice() is None


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    """A listening socket that accepts connections (the kernel's backlog) and never answers a byte."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server


def _pg_url(server: socket.socket, query: str = "") -> str:
    return f"postgresql+psycopg://u@127.0.0.1:{server.getsockname()[1]}/db{query}"


def test_a_ledger_that_never_answers_times_out(silent_server: socket.socket) -> None:
    pytest.importorskip("psycopg")
    started = time.monotonic()
    with pytest.raises(LedgerError, match="cannot open ledger"):
        make_engine(_pg_url(silent_server), connect_timeout_s=2)
    # Before: no timeout at all (it hung for minutes); the bound is the timeout plus slack.
    assert time.monotonic() - started < 30


def test_the_cli_names_the_timeout(silent_server: socket.socket) -> None:
    pytest.importorskip("psycopg")
    assert main(["table", "r", "--db", _pg_url(silent_server, "?connect_timeout=2")]) == 2


def test_sigterm_ends_a_run_stuck_connecting(silent_server: socket.socket) -> None:
    pytest.importorskip("psycopg")
    url = _pg_url(silent_server, "?connect_timeout=120")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    command = [sys.executable, "-m", "wattlog", "run", "--run", "r", "--db", url, "--", "true"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The connection waiting in the backlog makes the socket readable: the run is connecting.
        assert select.select([silent_server], [], [], 60)[0], "wattlog run never connected"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)  # before: only after the 120 s connect timeout
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 143, stderr
    assert "SIGTERM while starting" in stderr
