"""A Hugging Face transformers (>= 5) ``TrainerCallback`` that measures the run with wattlog::

    from wattlog.integrations.hf import WattlogCallback

    trainer = Trainer(model=model, args=args, train_dataset=data,
                      callbacks=[WattlogCallback("my-run", site="jupiter")])
    trainer.train()

Every process (rank) reports its optimizer steps to its own tracker; local rank 0
runs the node's agent. Each logging step's ``logs`` gain ``wattlog/energy_j`` (with its band
``energy_j_low``/``energy_j_high``), ``wattlog/co2_kg``, ``wattlog/water_l`` and, once tokens are
known, ``wattlog/tokens_per_joule``; the keys are the same on every machine, and the energy's source
label is a separate value, ``wattlog/energy_source``, logged when first known. For the reporters
(W&B, MLflow, TensorBoard, ...) to see them the callback must run first, and an
exception that ends ``train()`` must be seen (transformers has no exception hook):
``attach(trainer)`` does both, and a callback passed in ``callbacks=[...]`` attaches itself
when the Trainer is built (``on_init_end``). A checkpoint
save is recorded; a run resumed from a checkpoint continues its ledger run with a
restart event; ``with callback.window("eval"):`` measures a block into the ledger's windows.
Running the script again with the same run name records a new attempt (``my-run-2``) and says so
in one line; ``resume=True`` continues the first run instead. At the end, rank 0 prints a few lines of the
run's figures (``table=True``: the run beside Table 19).

Needs ``pip install 'wattlog[hf]'``.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from rich.console import Console

from wattlog.errors import WattlogError
from wattlog.extras import require

# Before the session (which imports torch), so a missing extra is its one line, not a traceback.
_transformers = require("transformers", "hf")
require("torch", "hf")

from wattlog.integrations.session import SOURCE_KEY, TrackerSession  # noqa: E402

log = logging.getLogger(__name__)

__all__ = ["WattlogCallback"]

TOKENS_HINT = (
    "Pass include_num_input_tokens_seen=True to TrainingArguments, or tokens_per_step=... to WattlogCallback."
)


class WattlogCallback(_transformers.TrainerCallback):  # type: ignore[misc, name-defined]
    """Measure a ``transformers.Trainer`` run and add its footprint to every log.

    Args:
        run: Run name in the ledger (None: $WATTLOG_RUN_ID).
        tokens_per_step: Tokens per optimizer step on this rank, when the Trainer does not count
            them (``include_num_input_tokens_seen``); None: counted by the Trainer or not reported.
        console: Where the run's figures are printed at the end (rank 0).
        table: End with the run beside Table 19 instead of a few lines.
        **tracker_kwargs: ``Tracker`` keywords: site, db, model, project, log_every, agent_config, ...
    """

    def __init__(
        self,
        run: str | None = None,
        *,
        tokens_per_step: int | None = None,
        console: Console | None = None,
        table: bool = False,
        **tracker_kwargs: Any,
    ) -> None:
        self.session = TrackerSession(
            run, tracker_kwargs, console=console, table=table, tokens_hint=TOKENS_HINT
        )
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
                result = train(*args, **kwargs)
            except BaseException as error:
                self.on_exception(error)
                raise
            # after every callback's on_train_end: the progress bar is closed, the lines come last
            self.session.show_end()
            return result

        trainer.train = measured_train
        self._attached = True
        return self

    def window(self, name: str, *, sync: Callable[[], object] | None = None) -> AbstractContextManager[Any]:
        """Measure the energy of a block (``with callback.window("eval"):``) into the ledger's windows."""
        return self.session.window(name, sync=sync)

    # transformers' hooks ------------------------------------------------------

    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Passed in ``Trainer(callbacks=[...])``: attach to that Trainer as ``attach()`` does."""
        if not self._attached:
            trainer = _calling_trainer(self)
            if trainer is not None:
                self.attach(trainer)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Start this rank's tracker (resuming the run when the Trainer resumed a checkpoint).

        Raises:
            WattlogError: Not attached and its Trainer cannot be found (the reporters would miss the figures).
        """
        if not self._attached:  # added after the Trainer was built (trainer.add_callback)
            trainer = _calling_trainer(self)
            if trainer is None:
                raise WattlogError(
                    "WattlogCallback cannot find its Trainer, so the reporters would miss its figures: "
                    "use WattlogCallback(...).attach(trainer) before trainer.train()"
                )
            self.attach(trainer)
            log.warning(
                "WattlogCallback was added after the Trainer was built: an exception ending this train() "
                "is not recorded; pass it in Trainer(callbacks=[...]) or call .attach(trainer) first"
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
        source = self.session.new_source()
        if source is not None:  # a string: logged when it changes, not at every step
            logs[SOURCE_KEY] = source

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Record the checkpoint."""
        self.session.checkpoint(state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Flush and end the run; rank 0 prints its figures once train() returns (or now, not attached)."""
        self._report_pending()
        self.session.end(show=not self._attached)

    def on_exception(self, error: BaseException) -> None:
        """Record the exception as an event, flush and end the run failed (or killed on Ctrl-C)."""
        self._report_pending()
        self.session.fail(error)

    def _report_pending(self, loss: Any = None, grad_norm: Any = None) -> None:
        if self._pending is not None:
            step, tokens = self._pending
            self._pending = None
            self.session.step(step, loss=loss, tokens=tokens, grad_norm=grad_norm)


def _calling_trainer(callback: WattlogCallback) -> Any | None:
    """The Trainer whose hook is running: the nearest caller frame's ``self`` whose handler holds `callback`.

    transformers hands its callbacks the model, optimizer and data loaders, never the Trainer,
    so the Trainer (whose reporters must run after wattlog) is found on the call stack.
    """
    frame = inspect.currentframe()
    try:
        for _ in range(_STACK_DEPTH):
            if frame is None:
                return None
            owner = frame.f_locals.get("self")
            handler = getattr(owner, "callback_handler", None)
            if any(c is callback for c in getattr(handler, "callbacks", ())):
                return owner
            frame = frame.f_back
        return None
    finally:
        del frame


_STACK_DEPTH = 12
"""Frames searched for the Trainer: Trainer.__init__/train -> handler.on_* -> call_event -> the hook."""
