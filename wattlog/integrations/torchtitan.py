"""Measure a TorchTitan (``torchtitan`` >= 0.3) ``Trainer`` with wattlog, through the parts it already has::

    from torchtitan.trainer import Trainer
    from wattlog.integrations.torchtitan import attach

    trainer = Trainer(config)
    attach(trainer, run="llama3-8b", tracker_kwargs={"site": "jupiter"})
    try:
        trainer.train()
    finally:
        trainer.close()

TorchTitan has no callback API, so :func:`attach` wraps the four seams its ``Trainer`` exposes
(names as in torchtitan 0.3's ``trainer.py``):

- ``train_step``: its tracker starts as the job's first step begins (after ``checkpointer.load``,
  so a restored job continues its ledger run with a restart event; before the step, so the first
  step's warm-up and compilation are measured and its log line has the figures); after each
  step this rank reports the step (``trainer.step``) and the tokens it trained on
  (``trainer.ntokens_seen``, a Python int: nothing is synced). The model's FLOPs per token
  (``metrics_processor.num_flops_per_token``) go to the tracker, so the run's table and report
  give joules per 10^18 FLOP;
- ``metrics_processor.logger``: replaced by a logger that adds ``wattlog/energy_j``,
  ``wattlog/co2_kg``, ``wattlog/water_l`` and ``wattlog/tokens_per_joule`` to the metrics dict
  and then hands it to TorchTitan's own loggers (TensorBoard, W&B), every ``log_freq`` steps;
- ``checkpointer.save``: a save that returned True becomes a checkpoint event;
- ``train``: its return ends the run finished, an exception ends it failed (and is re-raised);
  ``close()`` ends whatever is still open.

Every rank has its tracker; the node's local rank 0 runs the node's agent. Nothing here imports
torchtitan: these seams are plain attributes. tests/integrations/test_torchtitan.py drives them on
a stand-in with TorchTitan's names and, where torchtitan imports, on its real ``Trainer`` training
its llama3 debug model on CPU (which TorchTitan 0.3 does not support as shipped: that test says
what it patches). Needs ``pip install 'wattlog[torchtitan]'``.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wattlog.integrations.session import SOURCE_KEY, TrackerSession

__all__ = ["WattlogLogger", "attach"]

log = logging.getLogger(__name__)


@dataclass
class WattlogLogger:
    """A TorchTitan ``BaseLogger`` (``log(metrics, step)``, ``close()``) in front of the trainer's own.

    It adds the run's figures to the metrics dict before `inner` (TorchTitan's LoggerContainer,
    or its no-op BaseLogger on ranks that do not log) receives it, so every logger sees them.
    """

    inner: Any
    """TorchTitan's logger it hands the metrics to."""
    session: TrackerSession
    """This rank's tracker session."""

    def log(self, metrics: dict[str, Any], step: int) -> None:
        """Add energy, CO2, water and tokens per joule, then log as TorchTitan would."""
        metrics.update(self.session.figures())
        source = self.session.new_source()
        if source is not None:  # a label, not a number: TensorBoard scalars take floats only
            log.info("%s: %s", SOURCE_KEY, source)
        self.inner.log(metrics, step)

    def close(self) -> None:
        """Close TorchTitan's loggers, then end the run if still open (``trainer.close()`` calls this)."""
        try:
            self.inner.close()
        finally:
            if self.session.active:
                self.session.end()


@dataclass
class _Seams:
    """What attach() keeps between calls: the session and the tokens counted so far."""

    session: TrackerSession
    tokens_seen: int = 0
    """``trainer.ntokens_seen`` already reported (or restored with a checkpoint: not this attempt's)."""


def attach(
    trainer: Any,
    run: str | None = None,
    tracker_kwargs: dict[str, Any] | None = None,
    *,
    session: TrackerSession | None = None,
) -> TrackerSession:
    """Measure `trainer` (a ``torchtitan.trainer.Trainer``) with wattlog; call before ``train()``.

    Args:
        trainer: The TorchTitan trainer (built, not yet trained).
        run: Run name in the ledger (None: $WATTLOG_RUN_ID).
        tracker_kwargs: ``Tracker`` keywords: site, db, model, project, agent_config, ...
        session: A session to use instead (tests).

    Returns:
        The rank's tracker session (its ``window("eval")`` measures a block).
    """
    hint = "TorchTitan counts trainer.ntokens_seen per batch; check the data loader's labels."
    processor = trainer.metrics_processor
    kwargs = dict(tracker_kwargs or {})
    flops = getattr(processor, "num_flops_per_token", None)
    if isinstance(flops, (int, float)) and flops > 0:  # the model's own count: J per 10^18 FLOP
        kwargs.setdefault("flops_per_token", float(flops))
    seams = _Seams(session or TrackerSession(run, kwargs, tokens_hint=hint))
    processor.logger = WattlogLogger(processor.logger, seams.session)
    trainer.train_step = _stepping(trainer.train_step, trainer, seams)
    checkpointer = getattr(trainer, "checkpointer", None)
    if checkpointer is not None:
        checkpointer.save = _saving(checkpointer.save, seams)
        checkpointer.load = _after(checkpointer.load, lambda: _count_from(trainer, seams))
    trainer.train = _failing(trainer.train, trainer, seams)
    return seams.session


def _after(method: Callable[..., Any], then: Callable[[], None]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        then()
        return result

    return wrapped


def _stepping(train_step: Callable[..., Any], trainer: Any, seams: _Seams) -> Callable[..., Any]:
    @functools.wraps(train_step)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not seams.session.active:  # the job's first step: measured from its start
            restored = trainer.step - 1  # train() has already counted this step
            resume_step = restored if restored > 0 else None
            seams.session.start(rank=_rank("RANK"), local_rank=_rank("LOCAL_RANK"), resume_step=resume_step)
        result = train_step(*args, **kwargs)
        _report_step(trainer, seams)
        return result

    return wrapped


def _report_step(trainer: Any, seams: _Seams) -> None:
    """Report the step just trained with the tokens it added to ``trainer.ntokens_seen``."""
    seen = int(trainer.ntokens_seen)
    tokens, seams.tokens_seen = seen - seams.tokens_seen, seen
    seams.session.step(trainer.step, tokens=tokens)


def _count_from(trainer: Any, seams: _Seams) -> None:
    """Count tokens from here on (a restored checkpoint brings its own ntokens_seen)."""
    seams.tokens_seen = int(trainer.ntokens_seen)


def _saving(save: Callable[..., bool], seams: _Seams) -> Callable[..., bool]:
    @functools.wraps(save)
    def wrapped(curr_step: int, *args: Any, **kwargs: Any) -> bool:
        saved = save(curr_step, *args, **kwargs)
        if saved:  # TorchTitan returns False when this step is not a checkpoint step
            seams.session.checkpoint(curr_step)
        return saved

    return wrapped


def _failing(train: Callable[[], Any], trainer: Any, seams: _Seams) -> Callable[[], Any]:
    @functools.wraps(train)
    def wrapped() -> Any:
        _count_from(trainer, seams)
        try:
            result = train()
        except BaseException as error:
            seams.session.fail(error)
            raise
        seams.session.end()  # flushed and printed now; close() finds nothing left open
        return result

    return wrapped


def _rank(name: str) -> int:
    """torchrun's RANK / LOCAL_RANK (0 outside torchrun)."""
    text = os.environ.get(name, "").strip()
    return int(text) if text.isdigit() else 0
