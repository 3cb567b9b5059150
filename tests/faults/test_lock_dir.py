"""Fault: another wattlog agent on the machine holds the devices in the default lock folder.

On the old code every agent (and the tests) used <tmp>/wattlog, so any agent
running on the machine made two CLI tests fail. $WATTLOG_LOCK_DIR and
--lock-dir choose the folder; the tests each use a private one (tests/conftest.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wattlog.accounting.ledger.spool import default_folder as default_spool_folder
from wattlog.telemetry.agent import AgentConfig, default_lock_dir

HOLDER = """
import sys, time
from pathlib import Path
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.sensors.estimate import EstimateSensor
with Agent(AgentConfig(port=None, lock_dir=Path(sys.argv[1])), sensors=[EstimateSensor()]) as agent:
    print("holding", len(agent.devices), flush=True)
    time.sleep(60)
"""


def test_the_lock_folder_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WATTLOG_LOCK_DIR", str(tmp_path / "mine"))
    assert default_lock_dir() == tmp_path / "mine" == AgentConfig().lock_dir


def test_an_agent_holding_the_environment_folder_does_not_stop_one_with_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    monkeypatch.setenv("WATTLOG_LOCK_DIR", str(shared))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(shared)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().startswith("holding 2")
        agent = [sys.executable, "-m", "wattlog", "agent", "--seconds", "0.3", "--port", "-1"]
        busy = subprocess.run(agent, capture_output=True, text=True, timeout=60)
        own = subprocess.run(
            [*agent, "--lock-dir", str(tmp_path / "own")], capture_output=True, text=True, timeout=60
        )
    finally:
        holder.kill()
        holder.wait()
    assert "is measured by agent pid" in busy.stdout  # the environment's folder: the holder is seen
    assert own.returncode == 0 and "is measured by" not in own.stdout and "estimate:cpu" in own.stdout


def test_default_folders_are_not_named_like_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a folder `wattlog` in the current directory shadows the package for `python -m wattlog` run from there
    monkeypatch.delenv("WATTLOG_LOCK_DIR")
    monkeypatch.delenv("WATTLOG_SPOOL_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_lock_dir().name == "wattlog-locks"
    assert default_spool_folder() == tmp_path / "wattlog-spool"
