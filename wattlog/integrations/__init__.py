"""Callbacks for the trainers users already run: Hugging Face, Lightning, OLMo-core and TorchTitan.

- ``wattlog.integrations.hf.WattlogCallback``: a transformers (>= 5) ``TrainerCallback``
  (``pip install wattlog[hf]``).
- ``wattlog.integrations.lightning.WattlogCallback``: a Lightning (2.x) ``Callback``
  (``pip install wattlog[lightning]``).
- ``wattlog.integrations.olmo_core.WattlogCallback``: an OLMo-core trainer ``Callback``
  (``pip install wattlog[olmo-core]``).
- ``wattlog.integrations.torchtitan.attach``: TorchTitan (0.3) has no callback API, so ``attach``
  wraps its ``Trainer``'s train step, metrics logger, checkpointer and ``train()``
  (``pip install wattlog[torchtitan]``).

All four drive one :class:`~wattlog.integrations.session.TrackerSession`: every rank reports its
steps to its own ``Tracker``, the node's local rank 0 runs the one agent of the node, the
energy, CO2, water and tokens per joule go into each logging step's metrics (so W&B, MLflow
or TensorBoard, whichever the user chose, receive them), restarts and exceptions become
events, and rank 0 prints the footprint table at the end.

Names are imported on first use (wattlog.lazy): ``import wattlog.integrations.extras`` loads
neither torch nor the trainer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattlog.lazy import lazy_package

if TYPE_CHECKING:
    from wattlog.integrations.extras import MissingExtra, require
    from wattlog.integrations.session import TrackerSession, figures_of

_HOMES = {
    "MissingExtra": "wattlog.integrations.extras",
    "TrackerSession": "wattlog.integrations.session",
    "figures_of": "wattlog.integrations.session",
    "require": "wattlog.integrations.extras",
}

__all__ = ["MissingExtra", "TrackerSession", "figures_of", "require"]

lazy_package(__name__, _HOMES)
