"""Shared fixtures: a fake clock and the Debian server binaries the integration tests start."""

from __future__ import annotations

import pytest

from wattlog.clock import FakeClock


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
