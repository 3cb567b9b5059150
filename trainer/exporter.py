"""Training progress for Prometheus: a collector over the tracker's latest figures.

The bookkeeping thread updates a :class:`TrainingState`; scrapes read a copy
of it and never touch the device or the training thread.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from wattlog.events import INSTABILITIES, EventKind
from wattlog.metric_names import MetricName

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from wattlog.trainer.callbacks.speed import SpeedFigures
    from wattlog.trainer.metrics import StepRecord


EVENT_KINDS = tuple(sorted(INSTABILITIES)) + (
    EventKind.RESTART,
    EventKind.INVALID_TOKENS,
    EventKind.CHECKPOINT,
)
"""Kinds of `wattlog_train_events_total`, exported at 0 from the start: a counter that first appears
at 1 is invisible to `increase()`, so the first event of each kind would be missed (what the
detectors emit, the tracker's restart, token counts that are no count, and checkpoints, which the
dashboards draw as annotations)."""

LABELS = ["run", "rank", "host"]


class BookkeepingHealth(Protocol):
    """What the bookkeeping thread counts (trainer.metrics.BookkeepingThread)."""

    dropped: int
    failed: int


@dataclass(frozen=True, slots=True)
class TrainingSnapshot:
    """What a scrape sees (None: not reported yet)."""

    step: int | None = None
    tokens_total: float = 0.0
    loss: float | None = None
    grad_norm: float | None = None
    loss_scale: float | None = None
    tokens_per_s: float | None = None
    tokens_per_j: float | None = None
    mfu: float | None = None
    events: tuple[tuple[str, int], ...] = ()


@dataclass
class TrainingState:
    """Thread-safe holder of the latest training figures."""

    _snapshot: TrainingSnapshot = field(default_factory=TrainingSnapshot)
    _events: Counter[str] = field(default_factory=lambda: Counter(dict.fromkeys(EVENT_KINDS, 0)))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot(self) -> TrainingSnapshot:
        """A consistent copy."""
        with self._lock:
            return replace(self._snapshot, events=tuple(sorted(self._events.items())))

    def observe(self, records: Sequence[StepRecord]) -> None:
        """Take the latest values of a flushed batch and add its tokens."""
        if not records:
            return
        with self._lock:
            s = self._snapshot
            counts = [r.values["tokens"] for r in records if "tokens" in r.values]
            # one NaN would make the counter NaN for good: a count that is no count is an event instead
            valid = [float(n) for n in counts if math.isfinite(n) and n >= 0]
            if len(valid) < len(counts):
                self._events[EventKind.INVALID_TOKENS] += len(counts) - len(valid)
            tokens = s.tokens_total + sum(valid)
            latest: dict[str, float] = {}
            for record in records:
                latest.update(record.values)
            self._snapshot = replace(
                s,
                step=records[-1].step,
                tokens_total=tokens,
                loss=latest.get("loss", s.loss),
                grad_norm=latest.get("grad_norm", s.grad_norm),
                loss_scale=latest.get("loss_scale", s.loss_scale),
            )

    def speed(self, figures: SpeedFigures) -> None:
        """Take the speed callback's latest figures (a job's figures, set by :meth:`job`, stay)."""
        with self._lock:
            s = self._snapshot
            self._snapshot = replace(
                s,
                tokens_per_s=figures.tokens_per_s,
                tokens_per_j=figures.tokens_per_j if figures.tokens_per_j is not None else s.tokens_per_j,
                mfu=figures.mfu if figures.mfu is not None else s.mfu,
            )

    def job(self, tokens_per_j: float | None, mfu: float | None) -> None:
        """Take the whole job's tokens per joule and MFU (every rank's tokens, every node's energy)."""
        with self._lock:
            self._snapshot = replace(self._snapshot, tokens_per_j=tokens_per_j, mfu=mfu)

    def event(self, kind: str) -> None:
        """Count one training event (loss_spike, non_finite, restart, ...)."""
        with self._lock:
            self._events[kind] += 1


class TrainingCollector(Collector):
    """Training progress of one run; labels run, rank and host (so a dashboard's host filter keeps it).

    Emits::

        # HELP wattlog_train_tokens_total Tokens trained on by this rank.
        # TYPE wattlog_train_tokens_total counter
        # HELP wattlog_train_step Latest step reported.
        # TYPE wattlog_train_step gauge
        # HELP wattlog_train_loss Latest training loss.
        # TYPE wattlog_train_loss gauge
        # HELP wattlog_train_grad_norm Latest gradient norm.
        # TYPE wattlog_train_grad_norm gauge
        # HELP wattlog_train_loss_scale Latest dynamic loss scale.
        # TYPE wattlog_train_loss_scale gauge
        # HELP wattlog_train_tokens_per_second Tokens per second over the latest flushed steps.
        # TYPE wattlog_train_tokens_per_second gauge
        # HELP wattlog_train_tokens_per_joule Tokens per joule (of the whole job when it has several ranks).
        # TYPE wattlog_train_tokens_per_joule gauge
        # HELP wattlog_train_mfu_ratio Model FLOPs utilisation (0..1) over the latest flushed steps.
        # TYPE wattlog_train_mfu_ratio gauge
        # HELP wattlog_train_events_total Training events by kind (loss_spike, non_finite, restart, ...).
        # (every kind of EVENT_KINDS from the start, at 0)
        # TYPE wattlog_train_events_total counter
        # HELP wattlog_bookkeeping_dropped_total Metric batches dropped (behind).
        # TYPE wattlog_bookkeeping_dropped_total counter
        # HELP wattlog_bookkeeping_failures_total Bookkeeping operations that raised.
        # TYPE wattlog_bookkeeping_failures_total counter

    Args:
        state: The figures the bookkeeping thread keeps.
        run: The run label, or what reads it at each scrape (a re-run's new attempt renames the run).
        rank: The rank label.
        bookkeeping: The bookkeeping thread, whose drops and failures are exported (None: not exported).
        host: The host label (the agent's host; "" when none).
    """

    def __init__(
        self,
        state: TrainingState,
        run: str | Callable[[], str],
        rank: int = 0,
        bookkeeping: BookkeepingHealth | None = None,
        host: str = "",
    ) -> None:
        self._state = state
        self._run = run
        self._rank_host = [str(rank), host]
        self._bookkeeping = bookkeeping

    def collect(self) -> Iterator[Metric]:
        """Yield fresh families from the latest snapshot."""
        s = self._state.snapshot()
        labels = [self._run if isinstance(self._run, str) else self._run(), *self._rank_host]
        tokens = CounterMetricFamily(
            MetricName.TRAIN_TOKENS_TOTAL, "Tokens trained on by this rank.", labels=LABELS
        )
        tokens.add_metric(labels, s.tokens_total)
        yield tokens
        gauges = (
            (MetricName.TRAIN_STEP, "Latest step reported.", s.step),
            (MetricName.TRAIN_LOSS, "Latest training loss.", s.loss),
            (MetricName.TRAIN_GRAD_NORM, "Latest gradient norm.", s.grad_norm),
            (MetricName.TRAIN_LOSS_SCALE, "Latest dynamic loss scale.", s.loss_scale),
            (
                MetricName.TRAIN_TOKENS_PER_SECOND,
                "Tokens per second over the latest flushed steps.",
                s.tokens_per_s,
            ),
            (
                MetricName.TRAIN_TOKENS_PER_JOULE,
                "Tokens per joule (of the whole job when it has several ranks).",
                s.tokens_per_j,
            ),
            (
                MetricName.TRAIN_MFU_RATIO,
                "Model FLOPs utilisation (0..1) over the latest flushed steps.",
                s.mfu,
            ),
        )
        for name, doc, value in gauges:
            if value is not None:
                family = GaugeMetricFamily(name, doc, labels=LABELS)
                family.add_metric(labels, float(value))
                yield family
        events = CounterMetricFamily(
            MetricName.TRAIN_EVENTS_TOTAL,
            "Training events by kind (loss_spike, non_finite, restart, ...).",
            labels=[*LABELS, "kind"],
        )
        for kind, count in s.events:
            events.add_metric([*labels, kind], count)
        yield events
        if self._bookkeeping is not None:
            health = self._bookkeeping
            for name, doc, value in (
                (MetricName.BOOKKEEPING_DROPPED_TOTAL, "Metric batches dropped (behind).", health.dropped),
                (MetricName.BOOKKEEPING_FAILURES_TOTAL, "Bookkeeping operations that raised.", health.failed),
            ):
                counter = CounterMetricFamily(name, doc, labels=LABELS)
                counter.add_metric(labels, float(value))
                yield counter
