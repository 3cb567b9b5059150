"""Gaudi through hl-smi's CSV (a stand-in script printing its lines): the fallback without pyhlml."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.waiting import wait_until
from wattlog.errors import SensorUnavailable
from wattlog.records import Source
from wattlog.telemetry.sensors.base import ProbeOptions
from wattlog.telemetry.sensors.gaudi import GaudiBackend
from wattlog.telemetry.sensors.hlsmi import HlSmiSensor, parse_line

STAND_IN = """
import sys, time
lines = [
    "0, 01P4-HL3090A0-18-U4V193-22-07-00, HL-325L, 226 W, 850 W, 10 %, 672 MiB",
    "1, 01P4-HL3090A0-18-U4V298-03-04-04, HL-325L, N/A, 850 W, 0 %, 672 MiB",
]
while True:
    for line in lines:
        print(line, flush=True)
    if "-l" not in sys.argv:
        break
    time.sleep(0.05)  # hl-smi's -l is whole seconds; the stand-in is quicker
"""


def stand_in(tmp_path: Path) -> list[str]:
    script = tmp_path / "hl-smi.py"
    script.write_text(STAND_IN)
    return [sys.executable, str(script)]


def test_lines_parse_with_units_and_n_a() -> None:
    row = parse_line("0, 01P4-X, HL-325L, 226 W, 850 W, 10 %, 672 MiB")
    assert row is not None and (row.power_w, row.power_max_w, row.utilisation_pct) == (226.0, 850.0, 10.0)
    assert row.memory_used_bytes == 672 * 2**20
    na = parse_line("1, 01P4-Y, HL-325L, N/A, 850 W, 0 %, 672 MiB")
    assert na is not None and na.power_w is None  # missing, never 0
    assert parse_line("index, uuid, name") is None and parse_line("") is None


def test_the_stand_in_is_read_once_a_line_arrives_and_closed_cleanly(tmp_path: Path) -> None:
    sensor = HlSmiSensor(command=stand_in(tmp_path))
    devices = sensor.devices()
    assert [(d.index, d.source, d.has_counter, d.power_limit_w) for d in devices] == [
        (0, Source.SAMPLED, False, 850.0),
        (1, Source.SAMPLED, False, 850.0),
    ]
    assert "every 1 s" in devices[0].note and devices[0].profile is not None

    def first_reading():  # type: ignore[no-untyped-def]
        try:
            return sensor.read(devices[0], time.monotonic())
        except Exception:
            return None

    reading = wait_until(first_reading, 10.0, "no line from the stand-in")
    assert reading.power_w == 226.0 and reading.power_t_s is not None
    sensor.close()
    assert sensor._process.poll() is not None  # the loop was stopped


def test_the_backend_falls_back_on_hl_smi_where_pyhlml_is_missing(tmp_path: Path) -> None:
    backend = GaudiBackend(hl_smi=stand_in(tmp_path))
    sensor = backend.probe(backend.visibility({"HABANA_VISIBLE_MODULES": "1"}), ProbeOptions())
    assert isinstance(sensor, HlSmiSensor)
    assert [d.index for d in sensor.devices()] == [1]
    sensor.close()


def test_without_pyhlml_or_hl_smi_one_line_names_both(tmp_path: Path) -> None:
    backend = GaudiBackend(hl_smi=[str(tmp_path / "no-hl-smi")])
    result = backend.probe(backend.visibility({}), ProbeOptions())
    assert isinstance(result, str) and "pyhlml" in result and "hl-smi" in result
    with pytest.raises(SensorUnavailable):
        HlSmiSensor(command=[str(tmp_path / "no-hl-smi")]).devices()
