"""`wattlog calibrate --site S` measures its own window: the Redfish emulator's node beside simulated GPUs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.test_redfish_node import _config, emulator  # noqa: F401 - the fixture
from wattlog.accounting.fleet.calibration import CalibrationWindow, calibrate
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.windows import windows
from wattlog.records import Kind
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.redfish_node import RedfishNodeSensor
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.trainer.calibrate_window import measure_window


def test_calibrate_measures_idle_then_loaded_windows_against_the_node_meter(
    emulator: tuple[str, Path],  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    url, mockup = emulator
    chassis = mockup / "Chassis" / "1U"
    env = json.loads((chassis / "EnvironmentMetrics" / "index.json").read_text())
    del env["EnergykWh"]  # the static emulator's counter never moves: the node's power is integrated
    (chassis / "EnvironmentMetrics" / "index.json").write_text(json.dumps(env))
    power = json.loads((chassis / "Sensors" / "TotalPower" / "index.json").read_text())
    power["SensingInterval"] = "PT0.1S"  # a short window needs more than a reading a second
    (chassis / "Sensors" / "TotalPower" / "index.json").write_text(json.dumps(power))
    gpus = SimulatedSensor(simulated_gpus(2, lambda i: ConstantTrace(500.0)))
    db = f"sqlite:///{tmp_path / 'l.db'}"
    window = CalibrationWindow("jupiter", idle_s=1.5, load_s=1.5, db=db, run="cal")
    loads: list[float] = []

    def load(seconds: float) -> None:
        loads.append(seconds)
        time.sleep(seconds)

    run = measure_window(
        window,
        sensors=[gpus, RedfishNodeSensor(_config(url))],
        agent_config=AgentConfig(port=None, lock_dir=tmp_path),
        load=load,
    )
    assert run == "cal" and loads == [1.5]
    ledger = Ledger(make_engine(db))
    assert sorted({w.window for w in windows(ledger, run)}) == ["idle", "load"]
    kinds = {t.kind for t in ledger.energy_totals(run)}
    assert kinds == {Kind.GPU, Kind.NODE}
    found = calibrate(ledger, run)
    # 1412 W at the node beside 2 x 500 W: x1.41, its band from the meter's 2 % and the GPUs' own
    assert found.factor == pytest.approx(1.412, rel=0.15)  # the node integrates between its reads
    assert found.low < found.factor < found.high and found.site == "jupiter"
    assert "2 GPU(s)" in found.hardware and "Redfish meter" in found.hardware
