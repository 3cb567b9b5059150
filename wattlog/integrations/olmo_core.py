"""An OLMo-core (``ai2-olmo-core`` >= 2) trainer ``Callback`` that measures the run with wattlog::

    from wattlog.integrations.olmo_core import WattlogCallback

    callback = WattlogCallback(run="olmo2-7b", tracker_kwargs={"site": "jupiter"})
    trainer_config.with_callback("wattlog", callback)

Every rank reports its steps and tokens to its own tracker; the node's local rank 0 runs the
node's agent. The energy, CO2, water and tokens-per-joule keys (``wattlog/energy_j``,
``wattlog/co2_kg``, ``wattlog/water_l``, ``wattlog/tokens_per_joule``) are added to the
trainer's own metrics in ``pre_log_metrics``, so every OLMo-core logger (W&B, Comet, the
console) receives them with the loss; the energy's source label (simulated, counter, ...) is
logged once at INFO when first known, since OLMo-core's metrics are numbers only. Saved
checkpoints become events, a run that loaded a checkpoint continues its ledger run with a
restart event, an error ends it failed, and ``close()`` (which OLMo-core always calls) ends
whatever is still open. The hooks keep OLMo-core's names and order (STYLE #10); they only
read ``trainer.global_step`` and the batch's ``input_ids``, so they never sync the device.

Needs ``pip install 'wattlog[olmo-core]'``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar

from wattlog.extras import require

# Before the session (which imports torch), so a missing extra is its one line, not a traceback.
_callbacks = require("olmo_core.train.callbacks", "olmo-core", "the OLMo-core callback")
_distributed = require("olmo_core.distributed.utils", "olmo-core", "the OLMo-core callback")

from wattlog.integrations.session import SOURCE_KEY, TrackerSession  # noqa: E402

__all__ = ["WattlogCallback"]

log = logging.getLogger(__name__)


@dataclass
class WattlogCallback(_callbacks.Callback):  # type: ignore[misc, name-defined]
    """Measure an OLMo-core ``Trainer.fit()`` and log its footprint with the trainer's metrics."""

    priority: ClassVar[int] = 5  # before the loggers (priority 0 and below), so they see our keys

    run: str | None = None
    """Run name in the ledger (None: $WATTLOG_RUN_ID)."""
    tracker_kwargs: dict[str, Any] = field(default_factory=dict)
    """``Tracker`` keywords: site, db, model, project, log_every, agent_config, ..."""
    table: bool = False
    """End with the run beside Table 19 instead of a few lines (rank 0)."""

    _session: TrackerSession | None = field(default=None, init=False, repr=False)
    _tokens: float | None = field(default=None, init=False, repr=False)
    _loaded: bool = field(default=False, init=False, repr=False)

    @property
    def session(self) -> TrackerSession:
        """This rank's tracker session (built on first use)."""
        if self._session is None:
            hint = "OLMo-core batches carry input_ids; check the data loader's batch keys."
            self._session = TrackerSession(self.run, self.tracker_kwargs, table=self.table, tokens_hint=hint)
        return self._session

    def post_checkpoint_loaded(self, path: Any) -> None:
        """Note the restore: the run continues in the ledger (a restart event) when training starts."""
        self._loaded = True

    def pre_train(self) -> None:
        """Start this rank's tracker (OLMo-core has loaded any checkpoint by now)."""
        if not self.session.active:
            step = self.trainer.global_step
            self.session.start(
                rank=_distributed.get_rank(),
                local_rank=_distributed.get_local_rank(),
                resume_step=step if self._loaded and step else None,
            )

    def pre_step(self, batch: dict[str, Any]) -> None:
        """Count this rank's tokens of the batch (the element count of its input ids)."""
        ids: Any = batch.get("input_ids")
        self._tokens = float(ids.numel()) if hasattr(ids, "numel") else None

    def post_train_batch(self) -> None:
        """Report the step (the trainer's step counter already counts this batch)."""
        self.session.step(self.trainer.global_step, tokens=self._tokens)

    def pre_log_metrics(self, step: int, metrics: dict[str, float]) -> None:
        """Add energy, CO2, water and tokens per joule to the metrics the loggers are about to get."""
        metrics.update(self.session.figures())
        source = self.session.new_source()
        if source is not None:  # a label, not a number: OLMo-core's metrics take floats only
            log.info("%s: %s", SOURCE_KEY, source)

    def post_checkpoint_saved(self, path: Any) -> None:
        """Record the checkpoint (a later restart counts the steps after it as redone)."""
        self.session.checkpoint(self.trainer.global_step)

    def post_train(self) -> None:
        """Flush, end the run finished and print its figures (rank 0)."""
        self.session.end()

    def on_error(self, exc: BaseException) -> None:
        """Record the exception, flush and end the run failed (or killed on Ctrl-C)."""
        self.session.fail(exc)

    def close(self) -> None:
        """End a run still open (OLMo-core calls this on every exit path)."""
        if self._session is not None and self._session.active:
            self._session.end()
