"""Callbacks for the trainers users already run: Hugging Face and Lightning.

- ``wattlog.integrations.hf.WattlogCallback``: a transformers (>= 5) ``TrainerCallback``
  (``pip install wattlog[hf]``).
- ``wattlog.integrations.lightning.WattlogCallback``: a Lightning (2.x) ``Callback``
  (``pip install wattlog[lightning]``).

Both drive one :class:`~wattlog.integrations.session.TrackerSession`: every rank reports its
steps to its own ``Tracker``, the node's local rank 0 runs the one agent of the node, the
energy, CO2, water and tokens per joule go into each logging step's metrics (so W&B, MLflow
or TensorBoard, whichever the user chose, receive them), restarts and exceptions become
events, and rank 0 prints the footprint table at the end.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from wattlog.errors import WattlogError

__all__ = ["MissingExtra", "require"]


class MissingExtra(WattlogError, ImportError):
    """An optional dependency of an integration is not installed; the message names the pip command."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(f"this wattlog integration needs {module}: pip install 'wattlog[{extra}]'")
        self.module = module
        self.extra = extra


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, or raise :class:`MissingExtra` naming ``pip install wattlog[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtra(module, extra) from error
