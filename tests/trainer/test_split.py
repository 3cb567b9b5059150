"""Energy split by use and the lost-work window of a restart, on hand-made events."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from wattlog.accounting.publishing.split import Use, split_row, windows
from wattlog.trainer.restarts import last_attempt, lost_work


def _event(kind: str, time_s: float, step: int | None = None, **payload: object) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, time_s=time_s, step=step, payload=payload)


def test_row_energy_is_divided_by_time_with_precedence() -> None:
    by_use = {
        Use.HEALTH_CHECK: [(0.0, 2.0)],
        Use.LOST_WORK: [(5.0, 8.0)],
        Use.PRODUCTIVE: [(1.0, 9.0)],
        Use.OTHER: [],
    }
    parts = split_row(0.0, 10.0, 100.0, by_use)  # 10 W for 10 s
    assert parts[Use.HEALTH_CHECK] == pytest.approx(20.0)  # 0-2 (health check wins over productive 1-2)
    assert parts[Use.PRODUCTIVE] == pytest.approx(40.0)  # 2-5 and 8-9
    assert parts[Use.LOST_WORK] == pytest.approx(30.0)
    assert parts[Use.OTHER] == pytest.approx(10.0)  # 9-10
    assert sum(parts.values()) == pytest.approx(100.0)
    assert split_row(3.0, 3.0, 1.0, by_use)[Use.PRODUCTIVE] == 1.0  # zero-length row


def test_windows_from_events() -> None:
    events = [
        _event("health_check", 1.0, start_s=0.0, end_s=1.0),
        _event("progress", 20.0, 10, attempt=0, attempt_start_s=10.0),
        _event("progress", 30.0, 20, attempt=0, attempt_start_s=10.0),
        _event("lost_work", 40.0, 10, start_s=15.0, end_s=30.0),
        _event("progress", 60.0, 30, attempt=1, attempt_start_s=45.0),
        _event("loss_spike", 61.0, 30),
    ]
    found = windows(events)
    assert found[Use.HEALTH_CHECK] == [(0.0, 1.0)]
    assert found[Use.LOST_WORK] == [(15.0, 30.0)]
    assert sorted(found[Use.PRODUCTIVE]) == [(10.0, 30.0), (45.0, 60.0)]


def test_lost_work_runs_from_the_checkpoint_to_the_last_progress() -> None:
    events = [
        _event("progress", 20.0, 10, attempt=0, attempt_start_s=10.0),
        _event("checkpoint", 25.0, 15),
        _event("progress", 40.0, 32, attempt=0, attempt_start_s=10.0),
    ]
    assert last_attempt(events) == (0, 32, 10.0, 40.0)
    lost = lost_work(events)
    assert lost is not None and (lost.from_step, lost.to_step, lost.steps_redone) == (15, 32, 17)
    assert (lost.start_s, lost.end_s) == (25.0, 40.0)
    explicit = lost_work(events, resume_step=0)  # restart from scratch: the whole attempt is redone
    assert explicit is not None and explicit.steps_redone == 32 and explicit.start_s == 10.0
    assert lost_work(events, resume_step=32) is None
    assert lost_work([]) is None
