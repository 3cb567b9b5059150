"""The node boundary read over Redfish from a real emulator: sushy-tools' static server over our mockup.

The mockup (tests/data/redfish) is written in DMTF's schema: a rack-mount chassis with
EnvironmentMetrics (PowerWatts, EnergykWh), a Sensors collection (the chassis' total input
power and energy, a PSU's own input power), PowerSubsystem and the legacy Power resource,
and a GPU board chassis whose only power sensor is the GPU's (not the node).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.integration.servers import answers, free_port
from tests.waiting import wait_until
from wattlog.clock import FakeClock
from wattlog.errors import SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sensors.bmc import BmcConfig
from wattlog.telemetry.sensors.discovery import DiscoveryConfig, discover
from wattlog.telemetry.sensors.estimate import EstimateConfig
from wattlog.telemetry.sensors.redfish_node import RedfishNodeSensor

MOCKUP = Path(__file__).parents[1] / "data" / "redfish"
CHASSIS = MOCKUP / "Chassis" / "1U"
_MISSING = [name for name in ("redfish", "sushy_tools") if importlib.util.find_spec(name) is None]
pytestmark = pytest.mark.skipif(
    bool(_MISSING), reason=f"{' and '.join(_MISSING)} not installed: pip install redfish sushy-tools"
)


def _serve(mockup: Path, log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """Start sushy-static over `mockup` on a free port (three tries: a picked port can be taken)."""
    for _ in range(3):
        port = free_port()
        with log.open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "sushy_tools.static.main", "-i", "127.0.0.1", "-p", str(port)]
                + ["-m", str(mockup)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until(functools.partial(_up, process, f"{url}/redfish/v1"), 15, "not up in 15 s", 0.05)
            return url, process
        except (AssertionError, ChildProcessError):  # exited (its port taken) or slow: try another port
            pass
        process.kill()
        process.wait(timeout=5)
    raise RuntimeError(f"sushy-static did not start:\n{log.read_text(errors='replace')[-2000:]}")


def _up(process: subprocess.Popen[bytes], url: str) -> bool:
    """Whether the emulator answers at `url`.

    Raises:
        ChildProcessError: It has exited.
    """
    if process.poll() is not None:
        raise ChildProcessError(f"sushy-static exited with {process.returncode}")
    return answers(url)


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(URL, mockup folder) of a running emulator over a copy of the mockup the test may edit."""
    mockup = tmp_path / "mockup"
    shutil.copytree(MOCKUP, mockup)
    url, process = _serve(mockup, tmp_path / "sushy.log")
    yield url, mockup
    process.terminate()
    process.wait(timeout=5)


def _config(url: str) -> BmcConfig:
    return BmcConfig(redfish_url=url, redfish_user="monitor", redfish_password="not-logged")


def test_environment_metrics_give_the_node_power_and_energy_counter(emulator: tuple[str, Path]) -> None:
    url, _ = emulator
    sensor = RedfishNodeSensor(_config(url))
    [node] = sensor.devices()  # the GPU board's chassis has only the GPU's own sensor: not the node
    assert node.uuid.endswith("/redfish/v1/Chassis/1U") and node.name == "Computer System Chassis"
    assert (node.kind, node.source, node.has_counter) == (Kind.NODE, Source.COUNTER, True)
    assert "every 1 s (SensingInterval)" in node.note and "EnvironmentMetrics" in node.note
    assert node.profile is not None
    assert (node.profile.gain_low, node.profile.gain_high) == (-0.02, 0.02)  # the Sensor's own Accuracy: 2 %
    reading = sensor.read(node, 50.0)
    assert reading.power_w == 1412.0
    assert reading.energy_mj == pytest.approx(3650.125 * 3.6e9)
    assert reading.next_read_s == 51.0
    sensor.close()


def test_without_environment_metrics_the_chassis_sensor_is_taken_not_a_psu(
    emulator: tuple[str, Path],
) -> None:
    url, mockup = emulator
    chassis = json.loads((mockup / "Chassis" / "1U" / "index.json").read_text())
    del chassis["EnvironmentMetrics"]
    (mockup / "Chassis" / "1U" / "index.json").write_text(json.dumps(chassis))
    sensor = RedfishNodeSensor(_config(url))
    [node] = sensor.devices()
    assert "TotalPower" in node.note and "via Sensors" in node.note
    assert sensor.read(node, 1.0).power_w == 1412.0  # not PS1InputPower's 706 W


def test_legacy_power_resource_is_sampled_power_without_an_interval(emulator: tuple[str, Path]) -> None:
    url, mockup = emulator
    chassis = json.loads((mockup / "Chassis" / "1U" / "index.json").read_text())
    del chassis["EnvironmentMetrics"], chassis["Sensors"]
    (mockup / "Chassis" / "1U" / "index.json").write_text(json.dumps(chassis))
    sensor = RedfishNodeSensor(_config(url))
    [node] = sensor.devices()
    assert (node.source, node.has_counter) == (Source.SAMPLED, False)
    assert node.profile is not None and dict(node.profile.sources)["gain_low"].startswith("assumed")
    reading = sensor.read(node, 1.0)
    assert (reading.power_w, reading.energy_mj, reading.next_read_s) == (1398.0, None, None)


def test_discovery_takes_the_bmc_from_the_environment_beside_the_devices(
    emulator: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = emulator
    environ = {"WATTLOG_REDFISH_URL": url, "WATTLOG_REDFISH_USER": "u", "WATTLOG_REDFISH_PASSWORD": "pw-77"}
    found = discover(
        DiscoveryConfig(
            backends=[],
            environ=environ,
            powercap_root=tmp_path / "none",
            hwmon_root=tmp_path / "none",
            estimate=EstimateConfig(),
        )
    )
    kinds = sorted(device.kind.value for _, device in found.devices)
    assert kinds == ["cpu", "dram", "node"]  # the estimate's parts stay, shown apart from the node
    assert not any("pw-77" in text for text in (*found.notes, *(d.note for _, d in found.devices)))
    found.close()


def test_a_service_that_does_not_answer_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(SensorUnavailable, match="did not answer"):
        RedfishNodeSensor(_config(f"http://127.0.0.1:{free_port()}")).devices()


def test_a_kwh_counters_step_is_inside_the_band(emulator: tuple[str, Path]) -> None:
    """An EnergykWh Reading with 3 decimals steps by 3.6 kJ: the first and last readings' quantisation."""
    url, mockup = emulator
    sensor = RedfishNodeSensor(_config(url))
    [node] = sensor.devices()
    assert node.profile is not None and node.profile.counter_step_mj == 3.6e6
    unstepped = replace(node, profile=replace(node.profile, counter_step_mj=None))
    energy_file = mockup / "Chassis" / "1U" / "Sensors" / "TotalEnergy" / "index.json"
    readings = [sensor.read(node, 0.0)]
    body = json.loads(energy_file.read_text())
    body["Reading"] = 3650.129  # 4 steps later: 14.4 kJ over 10 s at 1412 W (14.12 kJ) as the BMC prints it
    energy_file.write_text(json.dumps(body))
    readings.append(sensor.read(node, 10.0))
    sensor.close()
    figures = []
    for device in (node, unstepped):
        integrator = Integrator([device], host="h", clock=FakeClock())
        for reading in readings:
            integrator.add(reading)
        [figure] = integrator.snapshot()
        figures.append(figure)
    stepped, plain = figures
    assert stepped.energy_j == pytest.approx(14_400.0) == plain.energy_j
    assert stepped.low_j == pytest.approx(plain.low_j - 3600.0)
    assert stepped.high_j == pytest.approx(plain.high_j + 3600.0)
    assert stepped.low_j <= 14_400.0 - 3600.0 and stepped.high_j >= 14_400.0 + 3600.0
