"""JsonlSink: one JSON object per row, appended and durable."""

from __future__ import annotations

import json
from pathlib import Path

from wattlog.records import EnergyInterval, Gap, Kind, Source
from wattlog.telemetry.sinks import JsonlSink

ROW = EnergyInterval.of("node1", "GPU-1", Kind.GPU, Source.COUNTER, 10.0, 20.0, 3000.0, 2800.0, 3300.0)
GAP = Gap("node1", "GPU-1", 12.0, 13.5, "lost: fell off the bus")


def test_rows_and_gaps_are_appended_with_their_labels(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "sub" / "energy.jsonl")
    sink.write([ROW], [GAP])
    sink.close()
    again = JsonlSink(tmp_path / "sub" / "energy.jsonl")
    again.write([ROW], [])
    again.close()
    again.close()
    lines = [json.loads(line) for line in (tmp_path / "sub" / "energy.jsonl").read_text().splitlines()]
    assert lines[0] == {
        "type": "interval",
        "host": "node1",
        "device": "GPU-1",
        "kind": "gpu",
        "source": "counter",
        "start_s": 10.0,
        "end_s": 20.0,
        "energy_j": 3000.0,
        "low_j": 2800.0,
        "high_j": 3300.0,
        "random_low_j": 0.0,
        "random_high_j": 0.0,
    }
    assert lines[1] == {
        "type": "gap",
        "host": "node1",
        "device": "GPU-1",
        "start_s": 12.0,
        "end_s": 13.5,
        "reason": "lost: fell off the bus",
    }
    assert len(lines) == 3


def test_nothing_is_created_before_the_first_write(tmp_path: Path) -> None:
    JsonlSink(tmp_path / "never.jsonl").close()
    assert not (tmp_path / "never.jsonl").exists()
