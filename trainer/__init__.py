"""Trainer: what a PyTorch training loop calls, and the `wattlog` command.

- tracker: Tracker, the context manager a training loop reports its steps to.
- metrics: DeviceMetricBuffer, BookkeepingThread, allow_sync, StepRecord (zero-sync step metrics).
- callback, callbacks/: Callback base; GCCallback, SpeedCallback, StabilityCallback.
- detectors: SpikeDetector, NonFiniteDetector, LossScaleDetector, GrowthDetector, Detection.
- health: health_check, HealthResult, compare_peers, exit_code; gpuchecks: the NVML checks.
- restarts, split: lost work of restarts; energy split (productive, lost work, health checks, idle).
- exporter: the training-progress Prometheus collector.
- example/: the small GPT and its generated corpus; demo, runner, report, commands: the CLI commands.

Names are imported on first use, so `wattlog --help` does not import torch.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

logging.getLogger(__name__).addHandler(logging.NullHandler())

_HOMES = {
    "Tracker": "trainer.tracker",
    "DeviceMetricBuffer": "trainer.metrics",
    "BookkeepingThread": "trainer.metrics",
    "StepRecord": "trainer.metrics",
    "allow_sync": "trainer.metrics",
    "Callback": "trainer.callback",
    "GCCallback": "trainer.callbacks",
    "SpeedCallback": "trainer.callbacks",
    "SpeedFigures": "trainer.callbacks",
    "StabilityCallback": "trainer.callbacks",
    "Detection": "trainer.detectors",
    "HealthResult": "trainer.health",
    "health_check": "trainer.health",
    "compare_peers": "trainer.health",
    "EnergySplit": "trainer.split",
    "energy_split": "trainer.split",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """Import the public names lazily (torch is heavy)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'trainer' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
