"""The supervisor: shell exit codes, signals forwarded to the child, the same codes from run and agent."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.cli import main
from wattlog.errors import ConfigError
from wattlog.telemetry.supervise import (
    Ending,
    StopRequested,
    Supervisor,
    cannot_start,
    exit_code_of,
)

KILL_ITSELF = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]


def _not_executable(tmp_path: Path) -> str:
    path = tmp_path / "job.sh"
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o644)
    return str(path)


def test_exit_codes_follow_the_shell(tmp_path: Path) -> None:
    with Supervisor() as supervisor:
        assert supervisor.run([sys.executable, "-c", "raise SystemExit(3)"]).exit_code == 3
        ok = supervisor.run(["true"])
        assert ok.exit_code == 0 and ok.ending is Ending.FINISHED
        missing = supervisor.run(["wattlog-no-such-command"])
        assert missing.exit_code == 127 and missing.ending is Ending.NOT_STARTED
        assert missing.message == "command not found: wattlog-no-such-command"
        refused = supervisor.run([_not_executable(tmp_path)])
        assert refused.exit_code == 126 and "not executable" in refused.message
        killed = supervisor.run(KILL_ITSELF)
        assert killed.exit_code == 137 and killed.ending is Ending.SIGNALLED and "SIGKILL" in killed.message
    assert exit_code_of(-15) == 143 and exit_code_of(2) == 2
    assert cannot_start("true") is None and cannot_start("wattlog-no-such-command") is not None
    with pytest.raises(ConfigError):
        Supervisor().run([])


def test_sigterm_is_forwarded_and_the_outcome_says_preempted() -> None:
    with Supervisor(grace_s=5.0) as supervisor:
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
        outcome = supervisor.run(["sleep", "30"])
        assert outcome.exit_code == 143 and outcome.ending is Ending.STOPPED and outcome.preempted
        with pytest.raises(StopRequested) as stopped:
            supervisor.check()
        assert stopped.value.signum is signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the caller's handler is back


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period() -> None:
    stubborn = [
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(30)",
    ]
    with Supervisor(grace_s=0.5) as supervisor:
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
        started = time.monotonic()
        outcome = supervisor.run(stubborn)
    assert outcome.exit_code == 143 and time.monotonic() - started < 10


def test_waiting_without_a_command_ends_at_the_time_or_the_signal() -> None:
    with Supervisor() as supervisor:
        assert supervisor.wait(0.1).exit_code == 0
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        interrupted = supervisor.wait(None)
    assert interrupted.exit_code == 130 and interrupted.received is signal.SIGINT
    assert not interrupted.preempted


def test_a_stop_before_the_command_starts_does_not_start_it() -> None:
    with Supervisor() as supervisor:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
        before = {p.pid for p in psutil.Process().children()}
        outcome = supervisor.run(["sleep", "30"])
        assert {p.pid for p in psutil.Process().children()} == before
    assert outcome.exit_code == 143


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["wattlog-no-such-command"], 127),
        (None, 126),
        (KILL_ITSELF, 137),
        ([sys.executable, "-c", "raise SystemExit(3)"], 3),
    ],
)
def test_wattlog_run_and_wattlog_agent_give_the_same_exit_code(
    command: list[str] | None, code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # device locks private to this test
    command = command or [_not_executable(tmp_path)]
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["run", "--run", "r", "--db", db, "--", *command]) == code
    assert main(["agent", "--port", "-1", "--seconds", "5", "--", *command]) == code
    status = Ledger(make_engine(db)).get_run("r").status
    assert status == ("killed" if code == 137 else "failed")


def test_a_stop_signal_inside_raising_stops_the_blocked_work_at_once() -> None:
    with Supervisor() as supervisor:
        with pytest.raises(StopRequested) as stopped, supervisor.raising():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # stands for a connect that never returns; the handler ends it
        assert stopped.value.signum is signal.SIGTERM and supervisor.received is signal.SIGTERM
        os.kill(os.getpid(), signal.SIGTERM)  # outside the block: recorded, not raised
        # and a block entered after a signal raises at once
        with pytest.raises(StopRequested), supervisor.raising():
            pass
