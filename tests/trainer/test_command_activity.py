"""`wattlog run` splits its command's energy by what the command did: a busy command is never idle."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from rich.console import Console

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.run_report import split_table, summary_lines
from wattlog.accounting.publishing.split import EnergySplit, Use, energy_split
from wattlog.cli import main
from wattlog.clock import FakeClock
from wattlog.events import Activity, EventKind
from wattlog.records import EnergyInterval, Kind, Source

BUSY = "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end:\n    pass"
SLEEPING = "import time\ntime.sleep(1.0)"
H0 = 1_767_225_600.0


def _activity(db: str, run: str) -> dict[str, float]:
    events = [e for e in Ledger(make_engine(db)).events(run) if e.kind == EventKind.ACTIVITY]
    assert len(events) == 1
    return dict(events[0].payload)


def test_wattlog_run_records_the_cpu_time_of_a_busy_and_of_a_sleeping_command(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert (
        main(["run", "--run", "busy", "--db", db, "--flush-s", "0.2", "--", sys.executable, "-c", BUSY]) == 0
    )
    args = ["run", "--run", "sleeping", "--db", db, "--flush-s", "0.2", "--", sys.executable, "-c", SLEEPING]
    assert main(args) == 0
    busy, sleeping = _activity(db, "busy"), _activity(db, "sleeping")
    assert busy["cpu_s"] >= 1.0  # it spun until its own CPU time reached 1 s, however loaded the machine
    assert sleeping["cpu_s"] < 0.5 and sleeping["end_s"] - sleeping["start_s"] >= 1.0
    ledger = Ledger(make_engine(db))
    spun, slept = (
        _busy_fraction(energy_split(ledger, "busy")),
        _busy_fraction(energy_split(ledger, "sleeping")),
    )
    # before: both were "the command (busy or waiting)"; and by CPU time alone a command spinning on a
    # loaded machine read 81 % idle (1.0 s of CPU in 6.1 s): it was runnable, waiting for a CPU
    assert spun >= 0.8 and slept < 0.5
    assert busy["runnable"] >= 0.8 and sleeping["runnable"] < 0.5


def _busy_fraction(split: EnergySplit) -> float:
    """The busy part of the command's own energy (wattlog's start and close, loaded or not, left out)."""
    busy, idle = split.joules[Use.COMMAND_BUSY], split.joules[Use.COMMAND_IDLE]
    return busy / (busy + idle)


def _ledger(tmp_path: Path, cpu_s: float, gpu_busy: float | None = None) -> Ledger:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=FakeClock(wall_offset_s=H0))
    run = ledger.start_run("cmd")
    rows = [  # 100 W for 10 s; the command ran from 1 s to 9 s
        EnergyInterval.of("h", "estimate:cpu", Kind.CPU, Source.ESTIMATED, H0 + t, H0 + t + 1, 100.0, 60, 140)
        for t in range(10)
    ]
    ledger.record_intervals(run.id, rows)
    payload = Activity(H0 + 1, H0 + 9, cpu_s, gpu_busy).to_json()
    ledger.record_event(run.id, EventKind.ACTIVITY, time_s=H0 + 9, payload=payload)
    return ledger


@pytest.mark.parametrize(
    ("cpu_s", "busy_j", "idle_j"), [(8.0, 800.0, 0.0), (16.0, 800.0, 0.0), (2.0, 200.0, 600.0)]
)
def test_the_commands_energy_is_divided_by_its_busy_fraction(
    tmp_path: Path, cpu_s: float, busy_j: float, idle_j: float
) -> None:
    split = energy_split(_ledger(tmp_path, cpu_s), "cmd")
    assert split.joules[Use.COMMAND_BUSY] == pytest.approx(busy_j)  # two busy cores are still "busy"
    assert split.joules[Use.COMMAND_IDLE] == pytest.approx(idle_j)
    assert split.joules[Use.OTHER] == pytest.approx(200.0)  # wattlog's start and close around it
    assert split.label(Use.OTHER) == "outside the command (wattlog's start and close)"


def test_a_fully_busy_command_is_printed_busy_not_idle(tmp_path: Path) -> None:
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(split_table(_ledger(tmp_path, 8.0), "cmd"))
    text = out.getvalue()
    assert "the command, busy (CPU time 8.0 s in 8.0 s)" in text and "80.0%" in text
    assert "the command, idle (asleep: no CPU or GPU use measured)" in text and "0.0%" in text


def test_a_command_waiting_on_its_busy_gpu_is_busy_not_idle(tmp_path: Path) -> None:
    split = energy_split(_ledger(tmp_path, 0.4, gpu_busy=0.9), "cmd")  # 5 % CPU, GPUs at 90 %
    assert split.joules[Use.COMMAND_BUSY] == pytest.approx(720.0)
    assert split.joules[Use.COMMAND_IDLE] == pytest.approx(80.0)
    assert split.label(Use.COMMAND_BUSY) == "the command, busy (CPU time 0.4 s in 8.0 s; GPU utilisation 90%)"


def test_the_energy_line_gives_the_band_in_the_figures_unit(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'e.db'}"), clock=FakeClock(wall_offset_s=H0))
    run = ledger.start_run("hf", RunSpec(site="jupiter"))
    row = EnergyInterval.of("h", "estimate:cpu", Kind.CPU, Source.ESTIMATED, H0, H0 + 60, 241.0, 120.5, 361.5)
    ledger.record_intervals(run.id, [row])
    [energy, *_] = summary_lines(ledger, "hf", None)
    assert energy == "Energy: 241 J (band 120 - 362 J; source: estimated)"  # was "band 0.0335 - 0.100 Wh"
