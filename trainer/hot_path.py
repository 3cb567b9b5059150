"""The Tracker's training-thread side: each step's values stay on the device; batches go to bookkeeping.

``step()`` never syncs with the device: it checks the values' types (never
their contents), buffers them, and every ``log_every`` steps moves the batch
in one non-blocking copy and hands it to the bookkeeping thread. The final
batch is handled on the closing thread, so a full queue cannot drop it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from wattlog.clock import Clock
from wattlog.trainer.bookkeeper import Bookkeeper
from wattlog.trainer.callback import Callback
from wattlog.trainer.metrics import BookkeepingThread, DeviceMetricBuffer
from wattlog.trainer.step_values import StepValues


class HotPath:
    """Buffers a tracker's steps on the device and moves them to the bookkeeping thread in batches.

    Args:
        log_every: Steps per batch.
        callbacks: Called at each step (pre_step, post_step), highest priority first.
        books: Handles each batch on the bookkeeping thread.
        thread: The bookkeeping thread.
        values: Checks the values given to a step and warns once per problem.
        clock: Time source of each step's wall time.
    """

    def __init__(
        self,
        log_every: int,
        callbacks: Sequence[Callback],
        books: Bookkeeper,
        thread: BookkeepingThread,
        values: StepValues,
        clock: Clock,
    ) -> None:
        self._buffer = DeviceMetricBuffer(log_every)
        self._callbacks = callbacks
        self._books = books
        self._thread = thread
        self._values = values
        self._clock = clock
        self._extra: dict[str, torch.Tensor | float] = {}
        self.step = 0
        """The latest step reported (the resume step before any)."""

    def add(self, given: Mapping[str, Any], step: int | None) -> None:
        """One training step's values (device tensors or numbers); a failure is one warning, never raised."""
        try:
            self.step = self.step + 1 if step is None else int(step)
            for callback in self._callbacks:
                callback.pre_step(self.step)
            metrics, self._extra = self._extra, {}
            metrics.update(self._values.checked(dict(given), self.step))
            now_s = self._clock.wall()
            if self._books.attempt_start_s is None:
                self._books.attempt_start_s = now_s
            due = self._buffer.add(self.step, now_s, metrics)
            for callback in self._callbacks:
                callback.post_step(self.step)
            if due:
                self.flush()
        except Exception as error:  # the tracker must never stop training
            self._values.warn_once(f"step-{type(error).__name__}", f"Tracker.step() skipped a step: {error}")

    def add_metric(self, name: str, value: torch.Tensor | float) -> None:
        """Attach a metric to the next step reported."""
        self._extra[name] = value

    def flush(self) -> None:
        """Move the buffered steps to the host (one non-blocking copy) and queue them for bookkeeping."""
        batch = self._buffer.flush()
        if batch is not None:
            self._thread.submit(lambda: self._books.handle(batch.resolve()))

    def drain(self) -> None:
        """Flush, then wait until bookkeeping has handled every queued batch."""
        self.flush()
        self._thread.drain()

    def close(self, timeout_s: float) -> bool:
        """Stop the bookkeeping thread, then handle the last batch here (a full queue cannot drop it).

        Args:
            timeout_s: How long to wait for the thread, seconds.

        Returns:
            Whether the thread stopped (False: still stuck in an operation, and logged as such).
        """
        last = self._buffer.flush()
        stopped = self._thread.close(timeout_s)
        if last is not None:
            self._books.safely("final bookkeeping", lambda: self._books.handle(last.resolve()))
        return stopped
