"""The callback base, shaped like OLMo-core's: a dataclass with no-op hooks.

Hooks run in this order: ``pre_train`` once, then per step ``pre_step`` and
``post_step`` (training thread; keep them free of host-device syncs), and
``log_metrics`` with each flushed batch of steps (bookkeeping thread).
``on_error`` runs when the training body raises, and ``close`` always runs.
Public fields are config, ``_`` fields are state; ``state_dict`` carries what a
resumed run needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from wattlog.trainer.metrics import StepRecord
    from wattlog.trainer.tracker import Tracker


@dataclass
class Callback:
    """A no-op callback; subclasses override the hooks they need."""

    priority: ClassVar[int] = 0
    """Higher runs first."""

    def pre_train(self, tracker: Tracker) -> None:
        """Before the first step (the tracker is started)."""

    def pre_step(self, step: int) -> None:
        """Before step `step` is reported (training thread)."""

    def post_step(self, step: int) -> None:
        """After step `step` was reported (training thread)."""

    def log_metrics(self, records: Sequence[StepRecord]) -> None:
        """A flushed batch of steps as Python values (bookkeeping thread)."""

    def on_error(self, error: BaseException) -> None:
        """The training body raised `error`."""

    def close(self) -> None:
        """Release what the callback holds; always runs."""

    def state_dict(self) -> dict[str, Any]:
        """State to checkpoint for resume."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output."""
