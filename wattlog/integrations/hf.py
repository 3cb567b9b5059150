"""A Hugging Face transformers (>= 5) ``TrainerCallback`` that measures the run with wattlog::

    from wattlog.integrations.hf import WattlogCallback

    trainer = Trainer(model=model, args=args, train_dataset=data)
    WattlogCallback("my-run", site="jupiter").attach(trainer)
    trainer.train()

Every process (rank) reports its optimizer steps to its own tracker; local rank 0
runs the node's agent. Each logging step's ``logs`` gain ``wattlog/<source>/energy_j``,
``.../co2_kg``, ``.../water_l`` and ``wattlog/tokens_per_joule`` before the reporters
(W&B, MLflow, TensorBoard, ...) see them; ``attach`` puts the callback first for that
(passed in ``callbacks=[...]`` it runs after them and they miss the figures) and records
an exception that ends ``train()`` (transformers has no exception hook). A checkpoint
save is recorded; a run resumed from a checkpoint continues its ledger run with a
restart event. At the end, rank 0 prints the run beside Table 19.

Needs ``pip install 'wattlog[hf]'``.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from rich.console import Console

from wattlog.integrations import require
from wattlog.integrations.session import TrackerSession

_transformers = require("transformers", "hf")
log = logging.getLogger(__name__)

__all__ = ["WattlogCallback"]


class WattlogCallback(_transformers.TrainerCallback):  # type: ignore[misc, name-defined]
    """Measure a ``transformers.Trainer`` run and add its footprint to every log.

    Args:
        run: Run name in the ledger (None: $WATTLOG_RUN_ID).
        tokens_per_step: Tokens per optimizer step on this rank, when the Trainer does not count
            them (``include_num_input_tokens_seen``); None: counted by the Trainer or not reported.
        console: Where the footprint table is printed at the end (rank 0).
        **tracker_kwargs: ``Tracker`` keywords: site, db, model, project, log_every, agent_config, ...
    """

    def __init__(
        self,
        run: str | None = None,
        *,
        tokens_per_step: int | None = None,
        console: Console | None = None,
        **tracker_kwargs: Any,
    ) -> None:
        self.session = TrackerSession(run, tracker_kwargs, console=console)
        self._tokens_per_step = tokens_per_step
        self._tokens_seen = 0
        self._pending: tuple[int, float | None] | None = None
        self._attached = False

    def attach(self, trainer: Any) -> WattlogCallback:
        """Put this callback first in `trainer` (before the reporters) and record exceptions of train()."""
        handler = trainer.callback_handler
        handler.callbacks = [self, *(c for c in handler.callbacks if c is not self)]
        train = trainer.train

        @functools.wraps(train)
        def measured_train(*args: Any, **kwargs: Any) -> Any:
            try:
                return train(*args, **kwargs)
            except BaseException as error:
                self.on_exception(error)
                raise

        trainer.train = measured_train
        self._attached = True
        return self

    # transformers' hooks ------------------------------------------------------

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Start this rank's tracker (resuming the run when the Trainer resumed a checkpoint)."""
        if not self._attached:
            log.warning(
                "WattlogCallback was not attached: the reporters run before it and miss its figures, and an "
                "exception ending train() is not recorded; use WattlogCallback(...).attach(trainer)"
            )
        if not self.session.active:
            self.session.start(
                rank=args.process_index,
                local_rank=args.local_process_index,
                resume_step=state.global_step or None,
            )
        self._tokens_seen = int(state.num_input_tokens_seen or 0)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Hold the step until its log (if any) brings its loss; report the one before."""
        self._report_pending()
        seen = int(state.num_input_tokens_seen or 0)
        tokens: float | None = float(seen - self._tokens_seen) if seen > self._tokens_seen else None
        self._tokens_seen = seen
        if tokens is None and self._tokens_per_step is not None:
            tokens = float(self._tokens_per_step)
        self._pending = (state.global_step, tokens)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """Report the held step with the logged loss, then add the footprint to `logs`."""
        if logs is None:
            return
        if self._pending is not None and "loss" in logs:
            self._report_pending(loss=logs.get("loss"), grad_norm=logs.get("grad_norm"))
        logs.update(self.session.figures())

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Record the checkpoint."""
        self.session.checkpoint(state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Flush, end the run and print the footprint table (rank 0)."""
        self._report_pending()
        self.session.end()

    def on_exception(self, error: BaseException) -> None:
        """Record the exception as an event, flush and end the run failed (or killed on Ctrl-C)."""
        self._report_pending()
        self.session.fail(error)

    def _report_pending(self, loss: Any = None, grad_norm: Any = None) -> None:
        if self._pending is not None:
            step, tokens = self._pending
            self._pending = None
            self.session.step(step, loss=loss, tokens=tokens, grad_norm=grad_norm)
