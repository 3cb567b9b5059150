"""The node boundary beside the device sum, and a site multiplier calibrated on it, without a BMC.

Run: ``.venv/bin/python -m bench.node_calibration [--idle-s 3] [--load-s 6]``

Two calibration windows (`wattlog calibrate --site S`'s own measurement, trainer.calibrate_window),
each idle then under the health check's load, with two simulated 500 W GPUs beside a node meter:
1. Redfish: sushy-tools' static emulator over the repository's DMTF mockup (tests/data/redfish;
   its energy counter never moves in a static mockup, so it is dropped and power integrated;
   SensingInterval 0.1 s so a short window holds many reads);
2. IPMI DCMI: the ipmitool stand-in (tests/telemetry/fake_ipmitool.py, 1390 W, 5 s period).
Prints each run's Table-19 row (node boundary note: node energy, the devices there, the
difference) and the multiplier with its band. Needs `redfish`, `sushy-tools` and torch.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from wattlog.accounting.fleet.calibration import CalibrationWindow, calibrate
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.cli import main as wattlog
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.bmc import BmcConfig
from wattlog.telemetry.sensors.dcmi import DcmiNodeSensor
from wattlog.telemetry.sensors.redfish_node import RedfishNodeSensor
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.trainer.calibrate_window import measure_window

ROOT = Path(__file__).parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _emulator(folder: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """sushy-static over a copy of the mockup, its counter dropped and its interval shortened."""
    mockup = folder / "mockup"
    shutil.copytree(ROOT / "tests" / "data" / "redfish", mockup)
    env_file = mockup / "Chassis" / "1U" / "EnvironmentMetrics" / "index.json"
    env = json.loads(env_file.read_text())
    del env["EnergykWh"]
    env_file.write_text(json.dumps(env))
    power_file = mockup / "Chassis" / "1U" / "Sensors" / "TotalPower" / "index.json"
    power = json.loads(power_file.read_text())
    power["SensingInterval"] = "PT0.1S"
    power_file.write_text(json.dumps(power))
    port = _free_port()
    command = [sys.executable, "-m", "sushy_tools.static.main", "-i", "127.0.0.1", "-p", str(port)]
    process = subprocess.Popen(
        [*command, "-m", str(mockup)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/redfish/v1", timeout=1).close()
            return url, process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("sushy-static did not start")


def _ipmitool(folder: Path) -> Path:
    script = folder / "ipmitool"
    script.write_text(
        f"#!{sys.executable}\n" + (ROOT / "tests" / "telemetry" / "fake_ipmitool.py").read_text()
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def main() -> None:
    """Measure both windows, print their rows and multipliers."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle-s", type=float, default=3.0)
    parser.add_argument("--load-s", type=float, default=6.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        db = f"sqlite:///{folder / 'l.db'}"
        url, emulator = _emulator(folder)
        try:
            meters: dict[str, Sensor] = {
                "redfish": RedfishNodeSensor(
                    BmcConfig(redfish_url=url, redfish_user="u", redfish_password="p")
                ),
                "dcmi": DcmiNodeSensor(BmcConfig(dcmi="local", ipmitool=str(_ipmitool(folder)))),
            }
            for meter, sensor in meters.items():
                gpus = SimulatedSensor(simulated_gpus(2, lambda i: ConstantTrace(500.0)))
                window = CalibrationWindow("jupiter", args.idle_s, args.load_s, db, run=f"cal-{meter}")
                measure_window(
                    window, sensors=[gpus, sensor], agent_config=AgentConfig(port=None, lock_dir=folder)
                )
        finally:
            emulator.terminate()
            emulator.wait(timeout=5)
        wattlog(["table", "cal-redfish", "cal-dcmi", "--db", db, "--format", "markdown"])
        ledger = Ledger(make_engine(db))
        for run in ("cal-redfish", "cal-dcmi"):
            c = calibrate(ledger, run)
            print(f"{run}: x{c.factor:.3f} [x{c.low:.3f} - x{c.high:.3f}] ({c.date}; {c.hardware})")
        ledger.engine.dispose()


if __name__ == "__main__":
    main()
