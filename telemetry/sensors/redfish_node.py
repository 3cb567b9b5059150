"""Node input power (and energy, where the BMC counts it) over Redfish, with the DMTF `redfish` client.

Which reading is the node boundary, in DMTF's schema, first found wins:
1. the chassis' EnvironmentMetrics: `PowerWatts` and `EnergykWh`, each naming its Sensor
   (`DataSourceUri`);
2. the chassis' Sensors collection: the Sensor with `ReadingType` "Power" (and "EnergykWh")
   whose `PhysicalContext` is the chassis (a PSU's or a GPU's own sensor is not the node);
3. the legacy Power resource: `PowerControl[0].PowerConsumedWatts` (no energy, no interval).

A Sensor's `SensingInterval` is the rate the row states (`next_read_s` spaces the reads
by it) and its `Accuracy` narrows the band; without them the wide numbers of node.toml
hold, said in the row's profile. An `EnergykWh` sensor is the node's energy counter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wattlog.errors import SensorError, SensorUnavailable, UntrustedInput
from wattlog.extras import MissingExtra, require
from wattlog.http_adapters import bounded_session
from wattlog.records import Kind, Source
from wattlog.telemetry.sensors.bmc import BmcConfig, iso_duration_s, node_profile
from wattlog.telemetry.sensors.redfish_limits import PowerLimit, check_counter, power_limit
from wattlog.telemetry.types import DeviceInfo, Reading

_PREFIX = "redfish:"
_KWH_MJ = 3.6e9  # 1 kWh = 3.6e6 J = 3.6e9 mJ
_NODE_CONTEXTS = ("Chassis", "SystemBoard", None)  # a Sensor without PhysicalContext: its chassis'
_MAX_ANSWER_BYTES = 4 << 20  # a chassis or sensor resource is a few kB of JSON


@dataclass(frozen=True, slots=True)
class _Meter:
    """Where one node's power (and energy) are read, and what the BMC says of them."""

    power_uri: str
    power_key: tuple[str, ...]  # path to the value in that resource's JSON
    energy_uri: str | None
    interval_s: float | None
    accuracy_pct: float | None
    what: str


def _client(config: BmcConfig) -> Any:
    """A logged-in DMTF Redfish client (basic auth: no session left open on the BMC)."""
    try:
        redfish = require("redfish", "node", "the Redfish node sensor")
    except MissingExtra as e:
        raise SensorUnavailable(str(e)) from e
    try:
        client = redfish.redfish_client(
            base_url=config.redfish_url,
            username=config.redfish_user,
            password=config.redfish_password,
            timeout=config.timeout_s,
            max_retry=1,
            check_connectivity=False,  # its first GET goes through the bounded adapter, in login
        )
        # the client's timeout bounds each read: the adapter bounds each whole answer and its size
        bounded_session(client._session, max_bytes=_MAX_ANSWER_BYTES, timeout_s=config.timeout_s)  # noqa: SLF001
        client.login(auth="basic")
    except Exception as e:  # the client raises its own and requests' errors: all mean "cannot reach it"
        why = f"Redfish service at {config.redfish_url} did not answer ({_why(e)})"
        raise SensorUnavailable(why) from e
    return client


def _why(error: BaseException) -> str:
    """A refusal of the answer (too slow, too long) where the client wrapped one, else the error's type."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, UntrustedInput):
            return seen.why
        seen = seen.__cause__ or seen.__context__
    return type(error).__name__


class RedfishNodeSensor:
    """The node boundary: one `node` device per chassis whose BMC reports input power.

    Args:
        config: Where the BMC is (URL and credentials from the environment, see `bmc`).
        connect: Makes the logged-in client (injected for tests; default the DMTF client).
    """

    def __init__(self, config: BmcConfig, connect: Callable[[BmcConfig], Any] = _client) -> None:
        self._config = config
        self._connect = connect
        self._client: Any = None
        self._meters: dict[str, _Meter] = {}
        self._limits: dict[str, PowerLimit] = {}
        self._last_energy: dict[str, tuple[float, float]] = {}  # uuid -> (t_s, mJ) of the last good read

    def _get(self, uri: str) -> dict[str, Any]:
        try:
            response = self._client.get(uri)
        except Exception as e:  # the client's retries exhausted: a gap, the reason named
            raise SensorError(f"Redfish GET {uri} failed ({_why(e)})") from e
        if response.status != 200:
            raise SensorError(f"Redfish GET {uri}: HTTP {response.status}")
        body = response.dict
        if not isinstance(body, dict):
            raise SensorError(f"Redfish GET {uri}: not a JSON object")
        return body

    def devices(self) -> list[DeviceInfo]:
        """One node device per chassis with an input-power reading.

        Raises:
            SensorUnavailable: The service does not answer, or no chassis reports input power.
        """
        if self._client is None:
            self._client = self._connect(self._config)
        try:
            found = self._chassis_devices()
        except (AttributeError, TypeError, KeyError, ValueError, IndexError) as e:  # garbage: one line
            raise SensorUnavailable(
                f"Redfish service at {self._config.redfish_url} answered outside DMTF's schema "
                f"({type(e).__name__}: {str(e)[:80]}): not read"
            ) from e
        if not found:
            raise SensorUnavailable(f"no chassis at {self._config.redfish_url} reports input power")
        return found

    def _chassis_devices(self) -> list[DeviceInfo]:
        found = []
        for member in self._get("/redfish/v1/Chassis").get("Members", []):
            chassis = self._get(member["@odata.id"])
            meter = self._meter(chassis)
            if meter is None:
                continue
            uuid = f"{_PREFIX}{self._config.redfish_url.split('://', 1)[-1]}{member['@odata.id']}"
            self._meters[uuid] = meter
            self._limits[uuid] = power_limit(chassis, self._get)
            profile = node_profile("Redfish", accuracy_pct=meter.accuracy_pct, period_s=meter.interval_s)
            every = f"every {meter.interval_s:g} s (SensingInterval)" if meter.interval_s else "no interval"
            note = f"node input power from the BMC over Redfish, {meter.what}, {every}"
            source = Source.COUNTER if meter.energy_uri else Source.SAMPLED
            name = str(chassis.get("Name") or chassis.get("Id") or member["@odata.id"])
            counts = meter.energy_uri is not None
            found.append(DeviceInfo(uuid, name, Kind.NODE, source, counts, note=note, profile=profile))
        return found

    def _meter(self, chassis: dict[str, Any]) -> _Meter | None:
        """The chassis' node-boundary reading, by the order in the module docstring."""
        env_uri = chassis.get("EnvironmentMetrics", {}).get("@odata.id")
        if env_uri:
            env = self._get(env_uri)
            power_uri = env.get("PowerWatts", {}).get("DataSourceUri")
            if power_uri:
                energy_uri = env.get("EnergykWh", {}).get("DataSourceUri")
                return self._sensor_meter(power_uri, energy_uri, "EnvironmentMetrics")
        sensors_uri = chassis.get("Sensors", {}).get("@odata.id")
        if sensors_uri:
            by_type: dict[str, str] = {}
            for member in self._get(sensors_uri).get("Members", []):
                sensor = self._get(member["@odata.id"])
                if sensor.get("PhysicalContext") in _NODE_CONTEXTS:
                    by_type.setdefault(str(sensor.get("ReadingType")), member["@odata.id"])
            if "Power" in by_type:
                return self._sensor_meter(by_type["Power"], by_type.get("EnergykWh"), "Sensors")
        power_uri = chassis.get("Power", {}).get("@odata.id")
        if power_uri and self._get(power_uri).get("PowerControl"):
            key = ("PowerControl", "0", "PowerConsumedWatts")
            return _Meter(power_uri, key, None, None, None, f"{power_uri} PowerConsumedWatts (legacy Power)")
        return None

    def _sensor_meter(self, power_uri: str, energy_uri: str | None, via: str) -> _Meter:
        sensor = self._get(power_uri)
        accuracy = sensor.get("Accuracy")
        # a kWh reading with 3 decimals steps by 3.6 kJ: fine over hours, coarse over seconds (said, no band)
        energy = f" and energy Sensor {energy_uri} (kWh: steps of its last digit)" if energy_uri else ""
        what = f"Sensor {power_uri}{energy} (via {via})"
        return _Meter(
            power_uri,
            ("Reading",),
            energy_uri,
            iso_duration_s(sensor.get("SensingInterval")),
            float(accuracy) if isinstance(accuracy, int | float) else None,
            what,
        )

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """The node's input power now, and its energy counter where the BMC has one.

        Raises:
            SensorError: The BMC did not answer or gave no number.
        """
        meter = self._meters.get(device.uuid)
        if meter is None:
            raise SensorError(f"{device.uuid} is not one of this sensor's chassis (call devices() first)")
        try:
            power_w = _number(self._get(meter.power_uri), meter.power_key)
            self._limits[device.uuid].check(device.uuid, power_w)  # 10^12 W was once energy
            energy = None if meter.energy_uri is None else _number(self._get(meter.energy_uri), ("Reading",))
        except SensorError:
            raise
        except Exception as e:  # connection errors of the client: a gap, as any failed read
            raise SensorError(f"{device.uuid}: Redfish read failed ({_why(e)})") from e
        energy_mj = None if energy is None else energy * _KWH_MJ
        if energy_mj is not None:
            check_counter(
                device.uuid, self._limits[device.uuid], self._last_energy.get(device.uuid), t_s, energy_mj
            )
            self._last_energy[device.uuid] = (t_s, energy_mj)
        return Reading(
            device.uuid,
            t_s,
            energy_mj=energy_mj,
            power_w=power_w,
            power_t_s=t_s,  # a publication stamped when read: gaps are spaced by the BMC's own interval
            next_read_s=None if meter.interval_s is None else t_s + meter.interval_s,
        )

    def close(self) -> None:
        """Log out of the BMC (basic auth holds no session, but the client may)."""
        if self._client is not None:
            # logging out of a BMC that went away is nothing to report
            with contextlib.suppress(Exception):
                self._client.logout()
            self._client = None


def _number(body: dict[str, Any], key: tuple[str, ...]) -> float:
    value: Any = body
    for part in key:
        if isinstance(value, list):
            value = value[int(part)] if int(part) < len(value) else None
        else:
            value = value.get(part) if isinstance(value, dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise SensorError(f"Redfish {'.'.join(key)} is not a number: {value!r}")
    return float(value)
