"""Run a command under measurement: start it, forward stop signals to it, report how it ended.

The one implementation behind `wattlog run -- CMD`, `wattlog agent -- CMD` and
the servers wattlog starts (the Streamlit report)::

    with Supervisor() as supervisor:
        start_measuring()
        outcome = supervisor.run(["python", "train.py"])
        stop_measuring(outcome)          # a SIGTERM here is remembered, not fatal
    sys.exit(outcome.exit_code)

While the block is open, SIGTERM and SIGINT do not kill this process: they are
recorded and forwarded to the child, so the caller still flushes its last
interval and closes the run with its true ending. SLURM and Kubernetes send
SIGTERM on preemption and SIGKILL a grace period later: the child gets
`grace_s` to exit before it is killed, which must fit in that period.

Exit codes follow the shell: the command's own code; 127 when it does not
exist, 126 when it cannot be executed; 128 + N when it dies of signal N; and
128 + N when this process was stopped by signal N (forwarded to the command,
whatever the command's own exit code then is: it was stopped, not finished).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import FrameType, TracebackType

from wattlog.errors import ConfigError

log = logging.getLogger(__name__)

COMMAND_NOT_FOUND = 127
"""Exit code of a command that does not exist (the shell's)."""
NOT_EXECUTABLE = 126
"""Exit code of a command that exists but cannot be executed (the shell's)."""
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""Signals forwarded to the child and turned into an orderly stop."""
_POLL_S = 0.05  # how often a wait looks at the signal flag (signal handlers run between waits)


class Ending(StrEnum):
    """How a supervised command (or a wait without one) ended."""

    FINISHED = "finished"
    """Exited 0, or the time was up."""
    FAILED = "failed"
    """Exited non-zero."""
    NOT_STARTED = "not_started"
    """Could not be started (not found, not executable)."""
    SIGNALLED = "signalled"
    """Died of a signal nobody here sent (e.g. the OOM killer's SIGKILL)."""
    STOPPED = "stopped"
    """This process received a stop signal (SIGTERM: preemption; SIGINT: Ctrl-C) and forwarded it."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How the command ended.

    Attributes:
        exit_code: This process's exit code by shell convention.
        ending: Finished, failed, not started, signalled or stopped.
        received: The stop signal this process received (None if none).
        message: One line for the user, or "" when there is nothing to say.
    """

    exit_code: int
    ending: Ending
    received: signal.Signals | None = None
    message: str = ""

    @property
    def preempted(self) -> bool:
        """Stopped by SIGTERM: what schedulers send on preemption."""
        return self.received is signal.SIGTERM


class StopRequested(BaseException):
    """A stop signal asked this process to end; raised where work stops at a safe point.

    A BaseException, like KeyboardInterrupt, so `except Exception` in user code does not swallow it.
    """

    def __init__(self, signum: signal.Signals) -> None:
        super().__init__(f"stopped by {signum.name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """The process's exit code by shell convention: 128 + the signal's number."""
        return stopped_by(self.signum)


def stopped_by(signum: int) -> int:
    """The exit code of a process stopped by signal `signum`, as a shell reports it: 128 + N."""
    return 128 + signum


def exit_code_of(returncode: int) -> int:
    """A child's return code as a shell reports it (killed by signal N: 128 + N)."""
    return stopped_by(-returncode) if returncode < 0 else returncode


def cannot_start(program: str) -> Outcome | None:
    """The outcome of starting `program` when it cannot start (not found, not executable), else None.

    For callers that must say so before starting anything else; :meth:`Supervisor.run` finds the same.
    """
    if os.sep not in program:
        if shutil.which(program) is not None:
            return None
        return Outcome(COMMAND_NOT_FOUND, Ending.NOT_STARTED, message=f"command not found: {program}")
    if not os.path.exists(program):
        return Outcome(COMMAND_NOT_FOUND, Ending.NOT_STARTED, message=f"command not found: {program}")
    if os.path.isdir(program) or not os.access(program, os.X_OK):
        return Outcome(NOT_EXECUTABLE, Ending.NOT_STARTED, message=f"command not executable: {program}")
    return None


class Supervisor:
    """Forward stop signals to one child at a time and tell how it ended; use as a context manager.

    Args:
        grace_s: Seconds a signalled child has to exit before it is killed.
        popen: Starts the child (injected for tests).
    """

    def __init__(
        self,
        *,
        grace_s: float = 10.0,
        popen: Callable[..., subprocess.Popen[bytes]] = subprocess.Popen,
    ) -> None:
        if not grace_s >= 0 or grace_s == float("inf"):
            raise ConfigError(f"grace_s must be a finite number >= 0, got {grace_s}")
        self._grace_s = grace_s
        self._popen = popen
        self._received: signal.Signals | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._previous: dict[signal.Signals, object] = {}
        self._signalled_at: float | None = None
        self._forwarded = False
        self._raising = False

    @property
    def received(self) -> signal.Signals | None:
        """The first stop signal received while the block was open (None if none)."""
        return self._received

    def __enter__(self) -> Supervisor:
        # Python runs signal handlers only in the main thread; elsewhere the caller's handlers stay.
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop_child()
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        received = signal.Signals(signum)
        if self._received is None:
            self._received = received
            self._signalled_at = time.monotonic()
        if self._raising:  # inside raising(): stop the blocked work now (e.g. a connect to a silent ledger)
            self._raising = False
            raise StopRequested(received)
        child = self._child
        if child is not None and child.poll() is None and not _terminal_sent(received):
            with contextlib.suppress(ProcessLookupError):  # it exited in between
                child.send_signal(received)
                self._forwarded = True

    @contextlib.contextmanager
    def raising(self) -> Iterator[None]:
        """While the block runs, a stop signal raises :class:`StopRequested` at once (after recording it).

        For start-up work that may block for long (opening a network ledger) and has nothing to
        flush yet: it is abandoned instead of finished first. A signal already received raises on entry.
        """
        self.check()
        self._raising = True
        try:
            yield
        finally:
            self._raising = False

    def check(self) -> None:
        """Raise :class:`StopRequested` if a stop signal came (for loops that stop at a safe point)."""
        if self._received is not None:
            raise StopRequested(self._received)

    def wait(self, seconds: float | None) -> Outcome:
        """Wait without a command: until `seconds` are up (None: forever) or a stop signal comes."""
        end_s = None if seconds is None else time.monotonic() + seconds
        while self._received is None and (end_s is None or time.monotonic() < end_s):
            time.sleep(_POLL_S if end_s is None else max(0.0, min(_POLL_S, end_s - time.monotonic())))
        if self._received is not None:
            return self._stopped(stopped_by(self._received))
        return Outcome(0, Ending.FINISHED)

    def run(
        self,
        command: Sequence[str],
        *,
        timeout_s: float | None = None,
        env: dict[str, str] | None = None,
    ) -> Outcome:
        """Run `command` to its end, forwarding stop signals; never raises for the command's sake.

        Args:
            command: Program and arguments.
            timeout_s: Stop the command (SIGTERM, then SIGKILL after grace_s) after this long.
            env: The child's environment (default: this process's).

        Raises:
            ConfigError: No command given.
        """
        if not command:
            raise ConfigError("give the command to run after --, e.g. wattlog run -- python train.py")
        if self._received is not None:  # stopped before the command could start: do not start it
            return self._stopped(stopped_by(self._received))
        program = command[0]
        try:
            self._child = self._popen(list(command), env=env, preexec_fn=die_with_parent())
        except FileNotFoundError:
            return Outcome(COMMAND_NOT_FOUND, Ending.NOT_STARTED, message=f"command not found: {program}")
        except PermissionError:
            return Outcome(NOT_EXECUTABLE, Ending.NOT_STARTED, message=f"command not executable: {program}")
        except OSError as error:  # e.g. ENOEXEC: a file without a valid interpreter line
            return Outcome(
                NOT_EXECUTABLE, Ending.NOT_STARTED, message=f"cannot run {program}: {error.strerror}"
            )
        if self._received is not None and not self._forwarded and not _terminal_sent(self._received):
            self._child.send_signal(self._received)  # the signal came while the child was being started
        timed_out = self._wait_child(timeout_s)
        code = exit_code_of(self._child.returncode)
        self._child = None
        if self._received is not None:  # whatever the child made of the signal, we were stopped by it
            return self._stopped(stopped_by(self._received))
        if timed_out:
            return Outcome(code, Ending.FINISHED, message=f"{timeout_s:g} s are up; stopped {program}")
        if code > 128 and code - 128 in _SIGNAL_NUMBERS:
            name = signal.Signals(code - 128).name
            return Outcome(code, Ending.SIGNALLED, message=f"{program} was killed by {name}")
        if code != 0:
            return Outcome(code, Ending.FAILED, message=f"{program} exited with code {code}")
        return Outcome(0, Ending.FINISHED)

    def _wait_child(self, timeout_s: float | None) -> bool:
        """Wait for the child; stop it at the timeout or a grace period after a signal. True if timed out."""
        assert self._child is not None
        end_s = None if timeout_s is None else time.monotonic() + timeout_s
        timed_out = False
        while True:
            try:
                self._child.wait(timeout=_POLL_S)
                return timed_out
            except subprocess.TimeoutExpired:
                pass
            now_s = time.monotonic()
            if end_s is not None and now_s >= end_s and not timed_out:
                timed_out = True
                self._child.terminate()
                self._signalled_at = now_s
            if self._signalled_at is not None and now_s - self._signalled_at > self._grace_s:
                log.warning("%s still runs %.0f s after the signal: killed", self._child.args, self._grace_s)
                self._child.kill()
                self._signalled_at = None

    def _stop_child(self) -> None:
        """Leave no child behind when the block ends early (an exception in the caller)."""
        child, self._child = self._child, None
        if child is None or child.poll() is not None:
            return
        child.terminate()
        try:
            child.wait(timeout=self._grace_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def _stopped(self, code: int) -> Outcome:
        assert self._received is not None
        return Outcome(code, Ending.STOPPED, self._received, message=f"stopped by {self._received.name}")


_SIGNAL_NUMBERS = {int(s) for s in signal.Signals}
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """A preexec function: the child gets SIGTERM when this process dies, even of kill -9 (Linux).

    Without it the command of a `wattlog run` killed -9 trained on unmeasured. The kernel
    sends the signal when the thread that started the child ends, so it is set only from the
    main thread (whose end is the process's). None where prctl is unavailable.
    """
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here: the child only calls it
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def set_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() != parent:  # the parent died between the fork and the prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return set_signal


def _terminal_sent(signum: signal.Signals) -> bool:
    """Whether Ctrl-C at our terminal sent this SIGINT: the child, in our foreground group, got it too."""
    if signum is not signal.SIGINT:
        return False
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False
