"""A Lightning (2.x) ``Callback`` that measures the run with wattlog::

    from wattlog.integrations.lightning import WattlogCallback

    trainer = L.Trainer(callbacks=[WattlogCallback("my-run", site="jupiter")])
    trainer.fit(model, data)

Every rank reports its steps to its own tracker; local rank 0 runs the node's agent.
``wattlog/energy_j`` (with ``energy_j_low``/``energy_j_high``), ``wattlog/co2_kg``,
``wattlog/water_l`` and, once tokens are known, ``wattlog/tokens_per_joule`` are logged with
``pl_module.log_dict`` after each batch, so every logger of the Trainer (W&B, MLflow,
TensorBoard, CSV) receives them at its ``log_every_n_steps``; the keys are the same on every
machine, and the energy's source label goes to each logger's hyperparameters
(``wattlog/energy_source``). Saved checkpoints are recorded; a fit resumed from one continues
the ledger run with a restart event; an exception is recorded and flushed
(``on_exception``); ``with callback.window("eval"):`` measures a block into the ledger's
windows. At the end, rank 0 prints a few lines of the run's figures (``table=True``: the run
beside Table 19), after the progress bar's last line.

Needs ``pip install 'wattlog[lightning]'``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from rich.console import Console

from wattlog.extras import require

# Before the session (which imports torch), so a missing extra is its one line, not a traceback.
_pl = require("lightning.pytorch", "lightning")
require("torch", "lightning")

from wattlog.integrations.session import SOURCE_KEY, TrackerSession  # noqa: E402

__all__ = ["WattlogCallback", "tokens_in"]


def tokens_in(batch: Any) -> float | None:
    """Tokens of a batch: the element count of its first tensor (input ids), or None if it has none."""
    if hasattr(batch, "numel"):
        return float(batch.numel())
    if isinstance(batch, dict):
        for key in ("input_ids", *batch):
            if key in batch and hasattr(batch[key], "numel"):
                return float(batch[key].numel())
    if isinstance(batch, list | tuple) and batch:
        return tokens_in(batch[0])
    return None


class WattlogCallback(_pl.Callback):  # type: ignore[misc, name-defined]
    """Measure a ``lightning.Trainer`` fit and log its footprint with the model's metrics.

    Args:
        run: Run name in the ledger (None: $WATTLOG_RUN_ID).
        count_tokens: Tokens of one batch on this rank (default :func:`tokens_in`; None: not reported).
        console: Where the run's figures are printed at the end (rank 0).
        table: End with the run beside Table 19 instead of a few lines.
        **tracker_kwargs: ``Tracker`` keywords: site, db, model, project, log_every, agent_config, ...
    """

    def __init__(
        self,
        run: str | None = None,
        *,
        count_tokens: Callable[[Any], float | None] = tokens_in,
        console: Console | None = None,
        table: bool = False,
        **tracker_kwargs: Any,
    ) -> None:
        hint = "Pass count_tokens=... to WattlogCallback (the default counts the batch's first tensor)."
        self.session = TrackerSession(run, tracker_kwargs, console=console, table=table, tokens_hint=hint)
        self._count_tokens = count_tokens

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Start this rank's tracker (after a checkpoint restore, so a resume is seen as one)."""
        if not self.session.active:
            self.session.start(
                rank=trainer.global_rank,
                local_rank=trainer.local_rank,
                resume_step=trainer.global_step or None,
            )

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Report the step, then hand the footprint to the Trainer's loggers."""
        loss: Any = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if hasattr(loss, "detach"):
            loss = loss.detach()
        self.session.step(trainer.global_step, loss=loss, tokens=self._count_tokens(batch))
        # no logger (logger=False): nothing to hand the figures to, and Lightning warns per key
        figures = self.session.figures() if trainer.loggers else {}
        if figures:
            pl_module.log_dict(figures, on_step=True, on_epoch=False, prog_bar=False, logger=True)
        source = self.session.new_source()
        if source is not None:  # a string: the loggers take it as a hyperparameter, not a metric
            for logger in trainer.loggers:
                logger.log_hyperparams({SOURCE_KEY: source})

    def window(self, name: str, *, sync: Callable[[], object] | None = None) -> AbstractContextManager[Any]:
        """Measure the energy of a block (``with callback.window("eval"):``) into the ledger's windows."""
        return self.session.window(name, sync=sync)

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        """Record the checkpoint."""
        self.session.checkpoint(trainer.global_step)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Flush and end the run; its figures are printed at teardown, under the finished progress bar."""
        self.session.end(show=False)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        """Print the ended run's figures (rank 0) once the progress bar is finished.

        The Trainer appends its progress bar after the user's callbacks: tqdm's finishes in its
        on_train_end, after this callback's, and rich's in its teardown, after this one, each
        redrawing the bar under whatever was printed before. Its teardown (which only stops it, and
        may run again) is called first here, so the figures are the last lines of the fit.
        """
        bar = trainer.progress_bar_callback
        if stage == "fit" and bar is not None:
            bar.teardown(trainer, pl_module, stage)
        self.session.show_end()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        """Record the exception as an event, flush and end the run failed (or killed on Ctrl-C)."""
        self.session.fail(exception)
