"""One family of energy types: every record holds an EnergyFigure, and the --format option is defined once.

Before, EnergyInterval, WindowEnergy, WindowDevice and SessionSummary each wrote out the
joules-band-kind-source block again, and two CLI modules defined their own --format.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from wattlog.records import EnergyFigure, EnergyInterval, Kind, Source

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("telemetry", "accounting", "trainer", "dashboards", "wattlog")


def test_an_interval_and_a_window_hold_a_figure_and_read_its_joules() -> None:
    figure = EnergyFigure(Kind.GPU, Source.COUNTER, 100.0, 90.0, 112.0, 4.0, 5.0)
    row = EnergyInterval("n0", "GPU-0", 10.0, 20.0, figure)
    window = dataclasses.replace(row, window="eval", parent="epoch")
    assert "energy_j" not in {f.name for f in dataclasses.fields(EnergyInterval)}
    assert (row.energy_j, row.low_j, row.high_j, row.kind, row.source) == (
        100.0, 90.0, 112.0, Kind.GPU, Source.COUNTER,
    )  # fmt: skip
    assert (row.random_low_j, row.random_high_j) == (4.0, 5.0)
    assert row.window == "" and window.window == "eval" and window.figure is row.figure


def test_a_json_line_keeps_its_flat_shape_and_reads_back_whole() -> None:
    figure = EnergyFigure(Kind.CPU, Source.SAMPLED, 7.5, 7.0, 8.0, 0.25, 0.5)
    row = EnergyInterval("n0", "cpu", 1.0, 2.0, figure)
    line = json.loads(json.dumps(row.as_dict()))
    assert line["energy_j"] == 7.5 and line["kind"] == "cpu" and "figure" not in line and "name" not in line
    assert EnergyInterval.from_dict(line) == row
    window = dataclasses.replace(row, window="eval", parent="")
    assert EnergyInterval.from_dict(json.loads(json.dumps(window.as_dict()))) == window


def test_a_line_with_an_unknown_source_is_refused() -> None:
    line = EnergyInterval.of("n0", "cpu", Kind.CPU, Source.SAMPLED, 1.0, 2.0, 1.0, 1.0, 1.0).as_dict()
    with pytest.raises(ValueError, match="guessed"):
        EnergyInterval.from_dict({**line, "source": "guessed"})


def test_the_format_option_is_defined_once() -> None:
    defined = [
        str(path.relative_to(ROOT))
        for folder in PRODUCT
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not path.is_symlink() and re.search(r"typer\.Option\(\s*\"--format\"", path.read_text("utf-8"))
    ]
    assert defined == ["wattlog/options.py"]
