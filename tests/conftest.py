"""Shared fixtures: a fake clock and the Debian server binaries the integration tests start."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

import psutil
import pytest

from wattlog.clock import FakeClock


def pytest_configure(config: pytest.Config) -> None:
    """SIGINT as in a terminal, for this process and every program a test starts.

    A suite started in the background by a non-interactive shell (`make test &`, some CI runners)
    inherits SIGINT ignored, and so would each child: a script told to stop by SIGINT then rightly
    ignores it, and the Ctrl-C tests read that as a fault. A Python handler is not inherited across
    exec, so the children start with SIGINT at its default.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock at t=0 that moves only when advanced (or slept on)."""
    return FakeClock()


@pytest.fixture(autouse=True)
def private_lock_and_spool_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test its own device-lock and spool folders: an agent running on the machine never interferes."""
    folder = tmp_path_factory.mktemp("wattlog-state")
    monkeypatch.setenv("WATTLOG_LOCK_DIR", str(folder / "locks"))
    monkeypatch.setenv("WATTLOG_SPOOL_DIR", str(folder / "spool"))
    # The user's default ledger lives under $XDG_DATA_HOME: never the real home's.
    monkeypatch.setenv("XDG_DATA_HOME", str(folder / "data"))


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees one terminal width, whatever the developer's or CI's: rich wraps at COLUMNS
    (80 without a terminal), so a message holding a long TMPDIR path was cut mid-phrase. Tests of
    narrow output set their own COLUMNS."""
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True)
def signal_handlers_restored() -> Iterator[None]:
    """Put SIGTERM/SIGINT's handlers back after each test, and fail the test that left one behind.

    A Tracker or supervisor installs handlers in the main thread; a test that forgets to close one
    would otherwise hand its handler to every later test (seen once in a full run: the supervisor's
    "the caller's handler is back" check then read a stranger's handler).
    """
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    yield
    leaked = [signum.name for signum, handler in before.items() if signal.getsignal(signum) is not handler]
    for signum, handler in before.items():
        signal.signal(signum, handler)
    assert not leaked, f"the test left its own handler for {', '.join(leaked)} installed"


_CHILDREN_KEY = pytest.StashKey[set[int]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Note this process's children before the test's body (servers its fixtures started are theirs)."""
    item.stash[_CHILDREN_KEY] = {child.pid for child in psutil.Process().children(recursive=True)}
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """Fail the test whose body left a process of its own running once its fixtures are torn down.

    The real SLURM test once passed and left its job's agent running, orphaned, for 48 minutes:
    whatever a test starts, it stops. The stragglers are killed, so later tests do not pay for them.
    """
    result = yield
    before = item.stash.get(_CHILDREN_KEY, None)
    if before is None:  # the body never ran (a setup failed or skipped)
        return result
    new = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and _running(p)]
    _, alive = psutil.wait_procs(new, timeout=2.0)  # a child that is exiting gets its moment
    left = [p for p in alive if _running(p) and not _shared_helper(p)]
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.kill()
    assert not left, f"the test left {len(left)} process(es) running: {', '.join(_named(p) for p in left)}"
    return result


def _shared_helper(process: psutil.Process) -> bool:
    """multiprocessing's resource tracker or fork server: started once for the whole session by the
    first test that spawns processes (torch's distributed tests), and ended by multiprocessing at exit."""
    try:
        line = " ".join(process.cmdline())
    except psutil.Error:
        return False
    return "multiprocessing.resource_tracker" in line or "multiprocessing.forkserver" in line


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _named(process: psutil.Process) -> str:
    try:
        return f"{process.pid} ({' '.join(process.cmdline())[:80]})"
    except psutil.Error:
        return str(process.pid)
