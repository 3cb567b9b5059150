"""Fixtures of the trainer tests: a raising tensor, simulated GPUs, a SQLite ledger per test."""

from __future__ import annotations

import time
from typing import Any

import pytest
import torch

from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.metrics import sync_allowed

# Every way a tensor becomes a Python value (each one a host-device sync on a GPU).
FORBIDDEN = {
    "item",
    "tolist",
    "numpy",
    "cpu",
    "__bool__",
    "__float__",
    "__int__",
    "__index__",
    "__complex__",
    "__format__",
    "__repr__",
    "__str__",
    "__array__",
}


class SyncError(AssertionError):
    """A conversion to a Python value happened outside allow_sync()."""


class NoSyncTensor(torch.Tensor):
    """A tensor that raises on any conversion to a Python value unless inside allow_sync()."""

    conversions: list[str] = []

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        if name in FORBIDDEN:
            if not sync_allowed():
                raise SyncError(f"{name}() on a step metric outside the flush")
            cls.conversions.append(name)
        return super().__torch_function__(func, types, args, kwargs or {})


def no_sync(value: torch.Tensor | float) -> torch.Tensor:
    """`value` as a NoSyncTensor."""
    tensor = value if isinstance(value, torch.Tensor) else torch.tensor(float(value))
    return tensor.detach().as_subclass(NoSyncTensor)


@pytest.fixture
def db_url(tmp_path: Any) -> str:
    """A fresh SQLite ledger file."""
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def sim(tmp_path: Any) -> dict[str, Any]:
    """Tracker keyword arguments for an agent over two simulated GPUs, locks in tmp_path."""
    return {
        "sensors": [SimulatedSensor(simulated_gpus(2, t0_s=time.monotonic()))],
        "agent_config": AgentConfig(port=0, flush_s=0.1, lock_dir=tmp_path / "locks"),
        "gc_every": None,
    }
