"""DeviceMetricBuffer, BookkeepingThread and allow_sync: values arrive, nothing syncs outside the flush."""

from __future__ import annotations

import threading

import pytest
import torch

from tests.trainer.conftest import NoSyncTensor, SyncError, no_sync
from wattlog.errors import ConfigError
from wattlog.trainer.metrics import BookkeepingThread, DeviceMetricBuffer, allow_sync, sync_allowed


def test_flush_returns_every_buffered_step_as_python_values() -> None:
    buffer = DeviceMetricBuffer(log_every=3)
    assert not buffer.add(1, 100.0, {"loss": torch.tensor(2.5), "tokens": 128})
    assert not buffer.add(
        2, 101.0, {"loss": torch.tensor([2.0]), "grad_norm": torch.tensor(1.0, dtype=torch.bfloat16)}
    )
    assert buffer.add(3, 102.0, {"tokens": torch.tensor(64)})
    batch = buffer.flush()
    assert batch is not None and len(buffer) == 0
    records = batch.resolve()
    assert [r.step for r in records] == [1, 2, 3]
    assert records[0].values == {"loss": 2.5, "tokens": 128.0}
    assert records[1].values == {"loss": 2.0, "grad_norm": 1.0}
    assert records[2].values == {"tokens": 64.0} and records[2].wall_s == 102.0
    assert buffer.flush() is None


def test_only_host_numbers_need_no_tensor() -> None:
    buffer = DeviceMetricBuffer(log_every=1)
    buffer.add(7, 0.0, {"loss": 1.25})
    batch = buffer.flush()
    assert batch is not None and batch.host is None
    assert batch.resolve()[0].values == {"loss": 1.25}


def test_log_every_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="log_every"):
        DeviceMetricBuffer(log_every=0)


def test_raising_tensors_pass_through_buffer_and_thread_without_a_sync() -> None:
    NoSyncTensor.conversions.clear()
    buffer = DeviceMetricBuffer(log_every=4)
    worker = BookkeepingThread()
    worker.start()
    seen: list[float] = []
    for step in range(1, 9):
        loss = no_sync(torch.tensor(float(step)) * 2)
        with pytest.raises(SyncError):
            loss.item()
        if buffer.add(step, float(step), {"loss": loss}):
            batch = buffer.flush()
            assert batch is not None
            worker.submit(lambda b=batch: seen.extend(r.values["loss"] for r in b.resolve()))
    worker.close()
    assert seen == [2.0 * s for s in range(1, 9)]
    assert worker.failed == 0 and worker.dropped == 0


def test_allow_sync_is_per_thread_and_nests() -> None:
    assert not sync_allowed()
    other: list[bool] = []
    with allow_sync():
        with allow_sync():
            assert sync_allowed()
        assert sync_allowed()
        thread = threading.Thread(target=lambda: other.append(sync_allowed()))
        thread.start()
        thread.join()
    assert not sync_allowed() and other == [False]


def test_bookkeeping_runs_in_order_counts_failures_and_drops_when_full() -> None:
    picked, gate = threading.Event(), threading.Event()
    done: list[int] = []
    worker = BookkeepingThread(max_pending=2)
    assert not worker.submit(lambda: None) and worker.dropped == 1  # not started
    worker.start()

    def blocked() -> None:
        picked.set()
        gate.wait()

    worker.submit(blocked)
    picked.wait()
    accepted = [worker.submit(lambda i=i: done.append(i)) for i in range(5)]
    assert accepted == [True, True, False, False, False] and worker.dropped == 4
    gate.set()
    worker.drain()
    worker.submit(lambda: 1 / 0)
    worker.submit(lambda: done.append(9))
    worker.close()
    assert done == [0, 1, 9]
    assert worker.failed == 1


def _stuck_worker(max_pending: int) -> tuple[BookkeepingThread, threading.Event]:
    """A running worker blocked in an operation until the returned event is set."""
    picked, gate = threading.Event(), threading.Event()
    worker = BookkeepingThread(max_pending=max_pending)
    worker.start()

    def stuck() -> None:
        picked.set()
        gate.wait()

    worker.submit(stuck)
    picked.wait()
    return worker, gate


def test_close_gives_up_on_a_stuck_operation_after_its_timeout_and_says_which_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker, gate = _stuck_worker(max_pending=8)
    try:
        with caplog.at_level("WARNING", logger="wattlog.trainer.metrics"):
            assert worker.close(timeout_s=0.2) is False
        assert worker.stuck
        assert "wattlog-bookkeeping did not stop within 0.2 s" in caplog.text
    finally:
        gate.set()
    assert worker.close() is True  # nothing left to stop


def test_close_returns_even_when_the_queue_is_full_behind_a_stuck_operation() -> None:
    worker, gate = _stuck_worker(max_pending=1)
    assert worker.submit(lambda: None)  # the queue is full now
    result: list[object] = []
    closing = threading.Thread(target=lambda: result.append(worker.close(timeout_s=0.2)), daemon=True)
    closing.start()
    closing.join(5.0)
    gate.set()
    assert not closing.is_alive() and result == [False]  # the old close() blocked on the full queue
