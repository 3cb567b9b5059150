"""Shared pieces of the framework-callback tests: a ledger and an agent over simulated GPUs."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import wait_until
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus


@pytest.fixture
def tracker_kwargs(tmp_path: Path) -> dict[str, Any]:
    """Tracker keywords: a SQLite ledger in tmp_path, two simulated GPUs, a loopback agent on any port."""
    return {
        "db": f"sqlite:///{tmp_path / 'ledger.db'}",
        "site": "jupiter",
        "sensors": [SimulatedSensor(simulated_gpus(2, t0_s=time.monotonic()))],
        "agent_config": AgentConfig(port=0, flush_s=0.1, lock_dir=tmp_path / "locks"),
        "gc_every": None,
        "log_every": 2,
        "environ": {},
    }


def wait_for_energy(session: Any, timeout_s: float = 30.0) -> None:
    """Wait until the session's agent has integrated energy (its figures carry ``wattlog/energy_j``).

    A loop of instant stand-in steps logs within the agent's first readings, before the simulated
    counters' first update, where the energy is unknown and no energy key is logged.
    """
    wait_until(
        lambda: "wattlog/energy_j" in session.figures(), timeout_s, f"no energy integrated in {timeout_s} s"
    )


def import_error_without(module: str, blocked: str) -> str:
    """The ImportError message of importing `module` in a fresh interpreter where `blocked` is missing."""
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        f"try:\n    import {module}\nexcept ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()
