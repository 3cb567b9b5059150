"""Measurement windows in the ledger (LedgerSink.write_windows) and `wattlog windows RUN`."""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, LedgerSink, make_engine
from wattlog.accounting.ledger.windows import windows
from wattlog.cli import main
from wattlog.errors import ConfigError
from wattlog.records import EnergyFigure, EnergyInterval, Kind, Source
from wattlog.telemetry.sinks import WindowSink

T0 = 1_767_225_600.0


def row(name: str, parent: str, device: str, start: float, end: float, energy_j: float) -> EnergyInterval:
    figure = EnergyFigure(Kind.GPU, Source.COUNTER, energy_j, 0.9 * energy_j, 1.1 * energy_j)
    return EnergyInterval("node0", device, start, end, figure, name, parent)


def test_windows_land_in_the_ledger_and_the_cli_lists_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r1")
    sink = LedgerSink(ledger, run.id)
    assert isinstance(sink, WindowSink)
    sink.write_windows(
        [
            row("epoch", "", "gpu0", T0, T0 + 60, 36_000.0),
            row("epoch", "", "gpu1", T0, T0 + 60, 36_000.0),
            row("eval", "epoch", "gpu0", T0 + 10, T0 + 20, 3_600.0),
        ]
    )
    assert [w.window for w in windows(ledger, "r1")] == ["epoch", "epoch", "eval"]
    assert main(["windows", "r1", "--db", url, "--format", "csv"]) == 0
    lines = [r for r in csv.reader(io.StringIO(capsys.readouterr().out)) if r and not r[0].startswith("#")]
    assert lines[0][:2] == ["Window", "Inside"]
    epoch = next(r for r in lines if r[0] == "epoch")
    assert epoch[4] == "2" and epoch[5] == "20.0000"  # two GPUs summed: 72 kJ = 20 Wh
    assert next(r for r in lines if r[0] == "eval")[1] == "epoch"


def test_a_window_ending_before_it_starts_is_refused(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    ledger.start_run("r")
    with pytest.raises(ConfigError, match="end before start"):
        LedgerSink(ledger, "r").write_windows([row("w", "", "gpu0", T0 + 5, T0, 1.0)])


def test_a_short_windows_share_of_a_wide_revision_never_takes_its_band_below_zero_or_off_its_energy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1 J window with a wide band inside a 100 J span whose low side a revision lowers by 85 J.

    Its share (1 %) took 0.85 J off a low of 0.1 J: w.low_j = -0.75 J, "Band Wh: -0.0002-..." (issue 38).
    A window's band lies in [0, inf) and holds its energy.
    """
    from wattlog.records import BandRevision

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(make_engine(url))
    ledger.start_run("r")
    span = [row("", "", "gpu0", T0 + i, T0 + i + 1, 1.0) for i in range(100)]
    ledger.record_intervals("r", [replace(r, window="") for r in span])
    short = EnergyFigure(Kind.GPU, Source.COUNTER, 1.0, 0.1, 2.0)
    LedgerSink(ledger, "r").write_windows(
        [EnergyInterval("node0", "gpu0", T0 + 5, T0 + 6, short, "step", "")]
    )
    ledger.record_revisions(
        "r", [BandRevision("node0", "gpu0", T0, T0 + 100, "wider", (-85.0, 0, 0, 0, 0, 0))]
    )
    (w,) = windows(ledger, "r")
    assert 0.0 <= w.low_j <= w.energy_j <= w.high_j
    assert main(["windows", "r", "--db", url, "--format", "csv"]) == 0
    lines = [r for r in csv.reader(io.StringIO(capsys.readouterr().out)) if r and not r[0].startswith("#")]
    band = next(r for r in lines if r[0] == "step")[6]
    assert not band.startswith("-") and float(band.split("-")[0]) >= 0.0
