"""Fault: the wall clock steps during a run (NTP correcting a drifted clock, a VM resumed).

On the old code the run's end was the wall clock at its end: a -30 s step gave a run of a
negative duration and +3,600 s moved its end an hour later, and everything that reads the
run (duration, per-hour intensity, the table) followed. Here the end is the wall clock at the
start plus monotonic time, and the step is recorded as a ``clock_step`` event.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, Status, make_engine
from wattlog.clock import FakeClock, SystemClock
from wattlog.events import EventKind
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.windows import Windows
from wattlog.trainer.session import RunSession, SessionConfig

RUN_S = 0.3


@pytest.mark.parametrize("step_s", [-30.0, 3600.0])
def test_a_wall_clock_step_is_recorded_and_moves_neither_the_end_nor_the_duration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step_s: float
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    agent = AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path)
    session = RunSession(
        SessionConfig("c", db=db, agent_config=agent), sensors=[SimulatedSensor(simulated_gpus(1))]
    )
    session.start()
    time.sleep(RUN_S)
    real = time.time
    # every wall-clock reader in the process (ledger, session, agent) sees the step
    monkeypatch.setattr(SystemClock, "wall", staticmethod(lambda: real() + step_s))
    session.close(Status.FINISHED)
    ledger = Ledger(make_engine(db))
    run = ledger.get_run("c")
    assert run.end_s is not None
    duration_s = run.end_s - run.start_s
    print(f"\nwall clock stepped {step_s:+.0f} s: run lasted {duration_s:.2f} s")
    assert RUN_S <= duration_s < RUN_S + 10.0  # old code: -29.7 s or 3,600.3 s
    steps = [e for e in ledger.events("c") if e.kind == EventKind.CLOCK_STEP]
    assert len(steps) == 1 and steps[0].payload["step_s"] == pytest.approx(step_s, abs=1.0)


def test_no_step_no_event(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    agent = AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path)
    session = RunSession(
        SessionConfig("c", db=db, agent_config=agent), sensors=[SimulatedSensor(simulated_gpus(1))]
    )
    session.start()
    session.close(Status.FINISHED)
    assert [e for e in Ledger(make_engine(db)).events("c") if e.kind == EventKind.CLOCK_STEP] == []


class SteppedClock(FakeClock):
    """A fake clock whose wall clock can step (NTP correcting it) while monotonic time goes on."""

    step_s = 0.0

    def wall(self) -> float:
        return super().wall() + self.step_s


def test_a_window_across_a_wall_clock_step_keeps_its_length() -> None:
    clock = SteppedClock()
    sensor = SimulatedSensor(simulated_gpus(1))
    integrator = Integrator(sensor.devices(), host="h", clock=clock)
    windows = Windows(integrator, clock, "h")
    window = windows.begin("eval")
    clock.advance(2.0)
    clock.step_s = 3600.0
    windows.end(window)
    assert window.end_s is not None and window.end_s - window.start_s == pytest.approx(2.0)  # old: 3,602 s
