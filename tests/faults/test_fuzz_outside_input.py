"""Every parser of outside input, fuzzed: any input gives a value or one typed error, never a traceback.

Spool lines, webhook bodies, provider JSON and CSV, Redfish JSON, bundle members and site
TOML come from files, servers and BMCs wattlog does not control. Each test feeds one
parser arbitrary input shaped like its own (so the fuzz gets past the first check) and
accepts only a result or the parser's typed error (a WattlogError, or the webhook's
PayloadError). Examples are few and small: the suite runs on 2 cores.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.telemetry.test_redfish_physics import Answer
from wattlog.accounting.carbon.intensity.csv_file import read_csv
from wattlog.accounting.carbon.intensity.live.client import HttpClient
from wattlog.accounting.carbon.intensity.live.electricitymaps_api import ElectricityMapsApi
from wattlog.accounting.carbon.intensity.live.ukgrid import UkGrid
from wattlog.accounting.carbon.sites import load_sites
from wattlog.accounting.ledger.spool_lines import read_spool
from wattlog.accounting.publishing.audit.bundle import verify_bundle
from wattlog.dashboards.alert_checks import PayloadError
from wattlog.dashboards.webhooks import parse
from wattlog.errors import WattlogError
from wattlog.telemetry.sensors.bmc import BmcConfig
from wattlog.telemetry.sensors.redfish_node import RedfishNodeSensor

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def keyed(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects whose keys are mostly the parser's own, with any values."""
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=6), json_values, max_size=len(keys) + 1)


def bounded(seconds: float, call: Any) -> Any:
    started = time.monotonic()
    try:
        return call()
    finally:
        assert time.monotonic() - started < seconds


SPOOL_KEYS = [
    "type",
    "run",
    "host",
    "device",
    "kind",
    "source",
    "start_s",
    "end_s",
    "energy_j",
    "low_j",
    "high_j",
]


@FUZZ
@given(st.lists(keyed(SPOOL_KEYS) | json_values, max_size=6), st.binary(max_size=200))
def test_spool_lines(tmp_path_factory: Any, items: list[Any], junk: bytes) -> None:
    path = tmp_path_factory.mktemp("spool") / "a.jsonl"
    path.write_bytes(b"".join(json.dumps(i).encode() + b"\n" for i in items) + junk)
    bounded(5, lambda: read_spool(path))  # bad lines are kept aside, never raised


ALERT_KEYS = ["version", "status", "alerts", "commonLabels", "labels", "annotations", "startsAt", "endsAt"]


@FUZZ
@given(keyed(ALERT_KEYS) | json_values | st.binary(max_size=100))
def test_webhook_bodies(body: Any) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with contextlib.suppress(PayloadError):
        bounded(5, lambda: parse(raw))


def _provider_answering(answer: Any) -> HttpClient:
    def opener(request: Any, timeout: float) -> Any:
        return io.BytesIO(json.dumps(answer).encode())

    return HttpClient("fuzz", "http://fuzz", opener=opener, retries=0)


UK_KEYS = ["data", "from", "to", "intensity", "actual", "forecast"]


@FUZZ
@given(st.dictionaries(st.just("data"), st.lists(keyed(UK_KEYS), max_size=4)) | json_values)
def test_provider_json_ukgrid(answer: Any) -> None:
    provider = UkGrid(_provider_answering(answer), lambda: 0.0)
    with contextlib.suppress(WattlogError):
        bounded(5, lambda: provider.history("GB", 0.0, 7200.0))


EM_KEYS = ["history", "forecast", "datetime", "carbonIntensity", "isEstimated"]


@FUZZ
@given(st.dictionaries(st.just("history"), st.lists(keyed(EM_KEYS), max_size=4)) | json_values)
def test_provider_json_electricitymaps(answer: Any) -> None:
    provider = ElectricityMapsApi(_provider_answering(answer), "token", lambda: 0.0)
    with contextlib.suppress(WattlogError):
        bounded(5, lambda: provider.history("DE", 0.0, 7200.0))


@FUZZ
@given(st.lists(st.text(alphabet='0123456789-:TZ., e+abc\t"', max_size=30), max_size=6))
def test_provider_csv(tmp_path_factory: Any, lines: list[str]) -> None:
    path = tmp_path_factory.mktemp("csv") / "grid.csv"
    path.write_text("timestamp,kg_co2_per_kwh\n" + "\n".join(lines), encoding="utf-8")
    with contextlib.suppress(WattlogError):
        bounded(5, lambda: read_csv(path))


REDFISH_KEYS = [
    *("Members", "@odata.id", "EnvironmentMetrics", "PowerWatts", "EnergykWh", "DataSourceUri", "Sensors"),
    *("ReadingType", "PhysicalContext", "Reading", "Power", "PowerControl", "PowerConsumedWatts"),
    *("PowerSubsystem", "CapacityWatts", "SensingInterval", "Accuracy", "Name"),
]


class FuzzClient:
    """A BMC answering each URI with drawn JSON (objects mostly of Redfish's own keys)."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def get(self, uri: str) -> Answer:
        body = self.data.draw(keyed(REDFISH_KEYS) | st.dictionaries(st.just("Members"), st.lists(
            st.fixed_dictionaries({"@odata.id": st.sampled_from(["/a", "/b"])}), max_size=2)))  # fmt: skip
        return Answer(200, body)

    def logout(self) -> None:
        pass


@FUZZ
@given(st.data())
def test_redfish_json(data: st.DataObject) -> None:
    sensor = RedfishNodeSensor(BmcConfig(redfish_url="http://bmc"), connect=lambda config: FuzzClient(data))
    try:
        for device in bounded(5, sensor.devices):
            bounded(5, lambda d=device: sensor.read(d, 1.0))
    except WattlogError:
        pass


BUNDLE_NAMES = [
    "manifest.json",
    "table.json",
    "run.json",
    "rows/order.bin",
    "series.bin",
    "../x",
    "/abs",
    "a",
]


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(BUNDLE_NAMES), st.binary(max_size=64)), max_size=5))
def test_bundle_members(tmp_path_factory: Any, members: list[tuple[str, bytes]]) -> None:
    path = tmp_path_factory.mktemp("bundle") / "b.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, body in members:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    with contextlib.suppress(WattlogError):
        bounded(10, lambda: verify_bundle(path))


TOML_WORDS = [
    *("[sites.a]", "[sites.a.intensity]", "pue = ", "wue_onsite_l_per_kwh = ", "source = "),
    *("carbon_intensity_kg_per_kwh = ", "zone = ", "1.2", "-3", '"x"', "nan", "inf", "[", "\n"),
]
SITE_TOML = st.lists(st.sampled_from(TOML_WORDS), max_size=12).map(" ".join)


@FUZZ
@given(SITE_TOML | st.text(max_size=80))
def test_site_toml(tmp_path_factory: Any, text: str) -> None:
    path = tmp_path_factory.mktemp("sites") / "sites.toml"
    Path(path).write_text(text, encoding="utf-8")
    with contextlib.suppress(WattlogError):
        bounded(5, lambda: load_sites(path))
