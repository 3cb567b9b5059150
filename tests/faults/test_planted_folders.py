"""Fault: another local user plants the default lock folder's path before root's first run.

On 38e5f82, as `nobody` under a shared <tmp>: (a) `mkdir <tmp>/wattlog-0` and a link
`wattlog-locks` to a folder root owns made root's run chmod that folder 0700 and create its
lock files there; (b) a 0777 `<tmp>/wattlog-0/wattlog-locks` refused every run of root's;
(c) a bare `<tmp>/wattlog-0` got root's lock folder made inside it, where it could later be
swapped. Now the path is walked without following another user's links: a planted folder is
named in one note and the run measures with locks in a fresh private folder.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattlog.telemetry.agent import Agent, AgentConfig, default_lock_dir
from wattlog.telemetry.sensors.estimate import EstimateSensor

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root to play another user (nobody)")


def as_nobody(*command: str) -> None:
    subprocess.run(["runuser", "-u", "nobody", "--", *command], check=True, timeout=30)


@pytest.fixture
def shared_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A root-owned 1777 folder standing in for /tmp, as tempfile's folder; no lock folder set."""
    folder = Path(tempfile.mkdtemp(prefix="wattlog-shared-"))
    folder.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv("WATTLOG_LOCK_DIR", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def measure() -> tuple[list[str], int]:
    with Agent(AgentConfig(port=None, linger_s=0), sensors=[EstimateSensor()]) as agent:
        return agent.notes, len(agent.devices)


def planted_notes(notes: list[str]) -> list[str]:
    return [note for note in notes if "not safe to use" in note]


def test_a_link_to_a_root_folder_is_never_chmodded_nor_written(shared_tmp: Path) -> None:
    target = Path(tempfile.mkdtemp(prefix="wattlog-victim-", dir="/tmp"))
    target.chmod(0o755)
    try:
        as_nobody("mkdir", str(shared_tmp / "wattlog-0"))
        as_nobody("ln", "-s", str(target), str(shared_tmp / "wattlog-0" / "wattlog-locks"))
        notes, devices = measure()
        assert stat.S_IMODE(target.stat().st_mode) == 0o755
        assert list(target.iterdir()) == []
    finally:
        subprocess.run(["rm", "-rf", str(target)], check=False)
    assert devices >= 1
    [note] = planted_notes(notes)
    assert "uid 65534" in note and "remove it" in note and "\n" not in note


def test_a_world_writable_lock_folder_of_theirs_does_not_stop_the_run(
    shared_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    as_nobody("mkdir", "-m", "0777", "-p", str(shared_tmp / "wattlog-0" / "wattlog-locks"))
    with caplog.at_level(logging.WARNING):
        notes, devices = measure()
    assert devices >= 1
    [note] = planted_notes(notes)
    assert str(default_lock_dir()) in note
    assert [r.getMessage() for r in caplog.records if "not safe to use" in r.getMessage()] == [note]  # shown
    assert list((shared_tmp / "wattlog-0" / "wattlog-locks").iterdir()) == []


def test_nothing_is_made_inside_a_parent_of_theirs(shared_tmp: Path) -> None:
    as_nobody("mkdir", str(shared_tmp / "wattlog-0"))
    notes, devices = measure()
    assert devices >= 1
    assert len(planted_notes(notes)) == 1
    assert list((shared_tmp / "wattlog-0").iterdir()) == []
    assert sorted(p.name for p in shared_tmp.iterdir()) == ["wattlog-0"]  # the fresh folder went with the run


def test_an_unplanted_path_is_made_private_and_used(shared_tmp: Path) -> None:
    notes, devices = measure()
    assert devices >= 1 and planted_notes(notes) == []
    made = shared_tmp / "wattlog-0" / "wattlog-locks"
    assert stat.S_IMODE(made.lstat().st_mode) == 0o700 and any(made.iterdir())


def test_the_runtime_folder_is_preferred(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("WATTLOG_LOCK_DIR", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert default_lock_dir() == tmp_path / "wattlog-locks"
