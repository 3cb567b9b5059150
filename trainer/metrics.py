"""Step metrics kept on the device, moved to the host every N steps without blocking.

The training thread only detaches tensors and appends them to a list
(:meth:`DeviceMetricBuffer.add`). Every ``log_every`` steps :meth:`DeviceMetricBuffer.flush`
does one ``torch.stack`` and one ``non_blocking`` copy into pinned host memory
(the one allowed transfer, marked by :func:`allow_sync`), and hands the batch to
the :class:`BookkeepingThread`, which waits for the copy, turns it into Python
floats and runs the exporters, the ledger and the detectors (OLMo-core's
``move_metrics`` + ``run_bookkeeping_op``).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import torch

from wattlog.errors import ConfigError

log = logging.getLogger(__name__)

_state = threading.local()


def sync_allowed() -> bool:
    """Whether the calling thread is inside :func:`allow_sync` (tests' raising tensors ask this)."""
    return getattr(_state, "depth", 0) > 0


@contextlib.contextmanager
def allow_sync() -> Iterator[None]:
    """Mark the one allowed device-to-host transfer.

    Inside it, CUDA's sync debug mode is set to 0 (so a run under
    ``torch.cuda.set_sync_debug_mode("error")`` lets the flush through) and
    :func:`sync_allowed` is true. On a CPU build only the flag is set:
    ``set_sync_debug_mode`` raises there.
    """
    cuda = torch.cuda.is_available()
    previous = torch.cuda.get_sync_debug_mode() if cuda else 0
    if cuda:
        torch.cuda.set_sync_debug_mode(0)
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1
        if cuda:
            torch.cuda.set_sync_debug_mode(previous)


@dataclass(frozen=True, slots=True)
class StepRecord:
    """The metrics of one step as Python values (made on the bookkeeping thread).

    Attributes:
        step: Training step number.
        wall_s: Unix time at which the step was reported.
        values: Metric name -> value (loss, tokens, grad_norm, loss_scale, ...).
    """

    step: int
    wall_s: float
    values: Mapping[str, float]


@dataclass(slots=True)
class PendingBatch:
    """One flush in flight: a host tensor being filled, and how to read it back."""

    host: torch.Tensor | None
    layout: list[tuple[int, str]]
    steps: list[tuple[int, float]]
    host_values: list[dict[str, float]]
    done: torch.cuda.Event | None = None

    def resolve(self) -> list[StepRecord]:
        """Wait for the copy (off the training thread) and build the step records."""
        # Polling the event is not a synchronising call, so sync debug mode stays quiet here too.
        while self.done is not None and not self.done.query():  # type: ignore[no-untyped-call]
            time.sleep(0.0005)
        values = [dict(v) for v in self.host_values]
        if self.host is not None:
            for (row, name), value in zip(self.layout, self.host.tolist(), strict=True):
                values[row][name] = value
        return [StepRecord(step, wall_s, v) for (step, wall_s), v in zip(self.steps, values, strict=True)]


@dataclass
class DeviceMetricBuffer:
    """Accumulates detached per-step metric tensors on their device.

    Python numbers are kept on the host as they come; tensors are detached
    and cast to float32 on their own device (no sync). Not thread-safe: the
    training thread owns it.
    """

    log_every: int = 10
    """Steps between flushes."""
    pin_memory: bool | None = None
    """Copy into pinned host memory; None = when CUDA is available."""
    _tensors: list[torch.Tensor] = field(default_factory=list, init=False, repr=False)
    _layout: list[tuple[int, str]] = field(default_factory=list, init=False, repr=False)
    _steps: list[tuple[int, float]] = field(default_factory=list, init=False, repr=False)
    _host_values: list[dict[str, float]] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        """Validate the config."""
        if self.log_every < 1:
            raise ConfigError(f"log_every must be >= 1 step, got {self.log_every}")

    def __len__(self) -> int:
        """Steps buffered since the last flush."""
        return len(self._steps)

    def add(self, step: int, wall_s: float, metrics: Mapping[str, torch.Tensor | float]) -> bool:
        """Buffer one step's metrics; return whether a flush is due.

        Args:
            step: Step number.
            wall_s: Unix time of the report.
            metrics: Name -> 0-d (or 1-element) tensor or Python number; validated by the caller.
        """
        row = len(self._steps)
        self._steps.append((step, wall_s))
        host: dict[str, float] = {}
        for name, value in metrics.items():
            if isinstance(value, torch.Tensor):
                self._tensors.append(value.detach().reshape(()).to(torch.float32))
                self._layout.append((row, name))
            else:
                host[name] = float(value)
        self._host_values.append(host)
        return len(self._steps) >= self.log_every

    def flush(self) -> PendingBatch | None:
        """Start moving the buffered steps to the host; None when nothing is buffered.

        This is the one device-to-host transfer: one stack, one non-blocking copy.
        """
        if not self._steps:
            return None
        host: torch.Tensor | None = None
        done = None
        if self._tensors:
            with allow_sync():
                stacked = _stack_by_device(self._tensors)
                pin = torch.cuda.is_available() if self.pin_memory is None else self.pin_memory
                host = torch.empty(stacked.shape, dtype=torch.float32, pin_memory=pin)
                host.copy_(stacked, non_blocking=stacked.device.type != "cpu")
                if stacked.device.type == "cuda":
                    done = torch.cuda.Event()  # type: ignore[no-untyped-call]
                    done.record()
        batch = PendingBatch(host, self._layout, self._steps, self._host_values, done)
        self._tensors, self._layout, self._steps, self._host_values = [], [], [], []
        return batch


def _stack_by_device(tensors: list[torch.Tensor]) -> torch.Tensor:
    """Stack on the first tensor's device (metrics from another device are moved there first)."""
    device = tensors[0].device
    return torch.stack([t if t.device == device else t.to(device, non_blocking=True) for t in tensors])


class BookkeepingThread:
    """A single worker thread running bookkeeping operations in order, off the training thread.

    The queue is bounded: if bookkeeping falls `max_pending` operations behind,
    new ones are dropped and counted rather than stalling training.

    Args:
        max_pending: Queue bound.
        name: Thread name.
    """

    def __init__(self, max_pending: int = 64, name: str = "wattlog-bookkeeping") -> None:
        if max_pending < 1:
            raise ConfigError(f"max_pending must be >= 1, got {max_pending}")
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue(maxsize=max_pending)
        self._name = name
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.failed = 0
        self.stuck = False
        """Whether close() gave up on a worker still running an operation."""

    @property
    def name(self) -> str:
        """The worker thread's name."""
        return self._name

    def start(self) -> None:
        """Start the worker (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            self._thread.start()

    def submit(self, op: Callable[[], None]) -> bool:
        """Queue `op`; return False (and count it) if the queue is full or the thread is not running."""
        if self._thread is None:
            self.dropped += 1
            return False
        try:
            self._queue.put_nowait(op)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 100 == 0:
                log.warning("bookkeeping is behind: %d metric batches dropped so far", self.dropped)
            return False
        return True

    def drain(self) -> None:
        """Block until every queued operation has run."""
        if self._thread is not None:
            self._queue.join()

    def close(self, timeout_s: float = 30.0) -> bool:
        """Run what is queued, then stop the worker; wait at most `timeout_s` seconds in all.

        Returns:
            True if the worker stopped (or never ran); False if it is still running an operation
            after the timeout: logged as a warning naming the thread, and the thread is left behind
            (a daemon, so it cannot keep the process alive).
        """
        if self._thread is None:
            return True
        thread, self._thread = self._thread, None
        deadline_s = time.monotonic() + timeout_s
        # A full queue behind a stuck operation must not block the caller forever.
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=max(0.0, timeout_s))
        thread.join(max(0.0, deadline_s - time.monotonic()))
        if not thread.is_alive():
            return True
        self.stuck = True
        log.warning(
            "thread %s did not stop within %.1f s (a bookkeeping operation is stuck): left running, "
            "its later metric batches are not handled",
            thread.name,
            timeout_s,
        )
        return False

    def _work(self) -> None:
        while True:
            op = self._queue.get()
            try:
                if op is None:
                    return
                op()
            except Exception:  # a failing exporter must not end bookkeeping
                self.failed += 1
                log.exception("bookkeeping operation failed")
            finally:
                self._queue.task_done()
