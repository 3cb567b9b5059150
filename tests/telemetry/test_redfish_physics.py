"""Fault: a BMC's numbers were used whatever they were.

On 38e5f82 a BMC reporting 10^12 W over Redfish was accepted (12 TJ, 2,300 t CO2e,
"measurement valid"). Now a reading above the chassis' supply rating x 1.5 (3,200 W
in the mockup), negative or not finite, or an energy counter rising faster than that,
is a failed read: a gap naming the bound, never energy.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from wattlog.errors import SensorError, SensorUnavailable
from wattlog.telemetry.sensors.bmc import BmcConfig
from wattlog.telemetry.sensors.redfish_limits import UNRATED_MAX_W, power_limit
from wattlog.telemetry.sensors.redfish_node import RedfishNodeSensor

MOCKUP = Path(__file__).parents[1] / "data" / "redfish"


@dataclass
class Answer:
    status: int
    dict: Any


class MockupClient:
    """The DMTF client's get() over the mockup's files, with some resources edited."""

    def __init__(self, edits: dict[str, dict[str, Any]] | None = None) -> None:
        self.edits = edits or {}

    def get(self, uri: str) -> Answer:
        path = MOCKUP / uri.removeprefix("/redfish/v1").strip("/") / "index.json"
        body = json.loads(path.read_text()) if path.exists() else None
        if body is None:
            return Answer(404, None)
        body = copy.deepcopy(body)
        body.update(self.edits.get(uri, {}))
        return Answer(200, body)

    def logout(self) -> None:
        pass


def sensor(edits: dict[str, dict[str, Any]] | None = None) -> RedfishNodeSensor:
    client = MockupClient(edits)
    return RedfishNodeSensor(BmcConfig(redfish_url="http://bmc"), connect=lambda config: client)


def power_uri() -> str:
    env = json.loads((MOCKUP / "Chassis/1U/EnvironmentMetrics/index.json").read_text())
    return str(env["PowerWatts"]["DataSourceUri"])


def energy_uri() -> str:
    env = json.loads((MOCKUP / "Chassis/1U/EnvironmentMetrics/index.json").read_text())
    return str(env["EnergykWh"]["DataSourceUri"])


def test_a_plausible_reading_is_used() -> None:
    node_sensor = sensor()
    [node] = node_sensor.devices()
    assert node_sensor.read(node, 50.0).power_w == 1412.0


@pytest.mark.parametrize("watts", [1e12, -5.0, 4801.0])
def test_power_beyond_the_supplies_rating_is_a_failed_read(watts: float) -> None:
    node_sensor = sensor({power_uri(): {"Reading": watts}})
    [node] = node_sensor.devices()
    with pytest.raises(SensorError, match=r"outside 0\.\.4800 W \(supplies rated 3200 W x 1\.5\)"):
        node_sensor.read(node, 50.0)


def test_an_energy_counter_rising_faster_than_the_rating_is_a_failed_read() -> None:
    client = MockupClient()
    node_sensor = RedfishNodeSensor(BmcConfig(redfish_url="http://bmc"), connect=lambda config: client)
    [node] = node_sensor.devices()
    first = node_sensor.read(node, 50.0)
    assert first.energy_mj is not None
    client.edits[energy_uri()] = {"Reading": first.energy_mj / 3.6e9 + 1000.0}  # +1 MWh in 1 s
    with pytest.raises(SensorError, match="energy counter rose"):
        node_sensor.read(node, 51.0)


def test_without_a_rating_the_bound_for_any_chassis_holds() -> None:
    limit = power_limit({}, lambda uri: {})
    assert limit.max_w == UNRATED_MAX_W and "no supply rating" in limit.basis
    with pytest.raises(SensorError):
        limit.check("redfish:x", 1e12)


def test_a_bmc_answering_garbage_is_one_line() -> None:
    class Garbage(MockupClient):
        def get(self, uri: str) -> Answer:
            return Answer(200, {"Members": "<html>login</html>", "@odata.id": 7})

    node_sensor = RedfishNodeSensor(BmcConfig(redfish_url="http://bmc"), connect=lambda config: Garbage())
    with pytest.raises(SensorUnavailable) as caught:
        node_sensor.devices()
    said = str(caught.value)
    assert "answered outside DMTF's schema" in said and "\n" not in said
