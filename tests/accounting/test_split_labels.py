"""Energy by use never says "idle" for a command nobody measured as idle."""

from __future__ import annotations

import io

from rich.console import Console

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.publishing.run_report import split_table
from wattlog.accounting.publishing.split import Use, energy_split
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Kind, Source

H0 = 1_767_225_600.0


def _ledger(tmp_path, steps: bool) -> Ledger:  # type: ignore[no-untyped-def]
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=FakeClock(wall_offset_s=H0))
    run = ledger.start_run("busy")
    # A CPU kept fully busy for 10 s: 100 W estimated, every row alike.
    rows = [
        EnergyInterval.of(
            "h", "estimate:cpu", Kind.CPU, Source.ESTIMATED, H0 + t, H0 + t + 1, 100.0, 60.0, 140.0
        )
        for t in range(10)
    ]
    ledger.record_intervals(run.id, rows)
    if steps:
        for t in (2.0, 8.0):
            ledger.record_event(
                run.id, "progress", time_s=H0 + t, payload={"attempt": 0, "attempt_start_s": H0 + 2}
            )
    return ledger


def _printed(ledger: Ledger) -> str:
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(split_table(ledger, "busy"))
    return out.getvalue()


def test_a_busy_command_without_steps_is_the_command_not_idle(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ledger = _ledger(tmp_path, steps=False)
    split = energy_split(ledger, "busy")
    assert split.joules[Use.OTHER] == 1000.0 and not split.steps
    text = _printed(ledger)
    assert "idle" not in text  # before: "idle (start-up, shutdown, waiting)  100.0%"
    assert "the command (it reported no steps" in text and "100.0%" in text


def test_with_steps_the_rest_is_outside_the_steps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ledger = _ledger(tmp_path, steps=True)
    split = energy_split(ledger, "busy")
    assert split.steps and split.joules[Use.PRODUCTIVE] == 600.0 and split.joules[Use.OTHER] == 400.0
    assert split.label(Use.OTHER, short=True) == "outside steps"
    assert "idle" not in _printed(ledger)
