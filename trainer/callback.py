"""The callback base, shaped like OLMo-core's: a dataclass with no-op hooks.

Hooks run in this order: ``pre_train`` once, then per step ``pre_step`` and
``post_step`` (training thread; keep them free of host-device syncs), and
``log_metrics`` with each flushed batch of steps (bookkeeping thread).
``on_error`` runs when the training body raises, and ``close`` always runs.
Public fields are config, ``_`` fields are state; ``state_dict`` carries what a
resumed run needs.

``pre_train`` receives a :class:`CallbackContext`, never the Tracker: the
clock, a way to attach a metric to the next step, the energy measured so far,
and the two channels back (a detection, speed figures). The tracker never
changes a callback's fields: what a callback reports goes through the context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from wattlog.clock import Clock
    from wattlog.trainer.callbacks.speed import SpeedFigures
    from wattlog.trainer.detectors import Detection
    from wattlog.trainer.metrics import StepRecord


def _ignore(_: Any) -> None:
    """A channel nobody listens to."""


def _no_energy() -> float | None:
    return None


@dataclass(frozen=True, slots=True)
class CallbackContext:
    """What a callback may use of the run it is part of.

    Attributes:
        run: The run's name.
        rank: Global rank of this process.
        clock: Time source of the tracker.
        add_metric: Attach a metric (tensor or number) to the next step reported.
        energy_j: Joules measured so far by this process's agent (None without one).
        detected: Report an instability (ledger event, Prometheus counter, alert hooks).
        speed: Publish speed figures (Prometheus gauges, progress events).
        watch: The module whose output norm the tracker was asked to watch (None: none).
    """

    run: str
    rank: int
    clock: Clock
    add_metric: Callable[[str, Any], None]
    energy_j: Callable[[], float | None] = _no_energy
    detected: Callable[[Detection], None] = _ignore
    speed: Callable[[SpeedFigures], None] = _ignore
    watch: Any = None


@dataclass
class Callback:
    """A no-op callback; subclasses override the hooks they need."""

    priority: ClassVar[int] = 0
    """Higher runs first."""

    def pre_train(self, context: CallbackContext) -> None:
        """Before the first step (the run is started); keep `context` to report through it."""

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
