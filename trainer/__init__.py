"""Trainer: what a PyTorch training loop calls, and the training commands of `wattlog`.

- session: RunSession, the torch-free run (ledger, agent, status) `wattlog run` uses;
  session_config: SessionConfig, what it records (validated once).
- tracker: Tracker over a session, the context manager a training loop reports its steps to;
  tracker_config: TrackerConfig; step_values: the checks of step() values.
- metrics: DeviceMetricBuffer, BookkeepingThread, allow_sync, StepRecord (zero-sync step metrics).
- callback, callbacks/: Callback base, the CallbackContext it gets; GCCallback, SpeedCallback,
  StabilityCallback.
- detectors: SpikeDetector, NonFiniteDetector, LossScaleDetector, GrowthDetector, Detection.
- health: health_check, HealthResult, compare_peers, exit_code; gpuchecks: the NVML checks.
- restarts: lost work of restarts (the energy split by use is wattlog.accounting.publishing.split).
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
    "Tracker": "wattlog.trainer.tracker",
    "TrackerConfig": "wattlog.trainer.tracker_config",
    "RunSession": "wattlog.trainer.session",
    "SessionConfig": "wattlog.trainer.session_config",
    "CallbackContext": "wattlog.trainer.callback",
    "DeviceMetricBuffer": "wattlog.trainer.metrics",
    "BookkeepingThread": "wattlog.trainer.metrics",
    "StepRecord": "wattlog.trainer.metrics",
    "allow_sync": "wattlog.trainer.metrics",
    "Callback": "wattlog.trainer.callback",
    "GCCallback": "wattlog.trainer.callbacks",
    "SpeedCallback": "wattlog.trainer.callbacks",
    "SpeedFigures": "wattlog.trainer.callbacks",
    "StabilityCallback": "wattlog.trainer.callbacks",
    "Detection": "wattlog.trainer.detectors",
    "HealthResult": "wattlog.trainer.health",
    "health_check": "wattlog.trainer.health",
    "compare_peers": "wattlog.trainer.health",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """Import the public names lazily (torch is heavy)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'wattlog.trainer' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
