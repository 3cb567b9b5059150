"""The OTLP exporter: semantic-convention names, units, attributes; OTLP/HTTP totals equal the ledger."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from wattlog.accounting.fleet.recording import LedgerTarget, Recording, RecordingConfig
from wattlog.accounting.ledger.engine import make_engine
from wattlog.accounting.ledger.store import Ledger
from wattlog.errors import ConfigError
from wattlog.metric_names import OtelName
from wattlog.records import EnergyFigure, Kind, Source
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.otlp import OtlpConfig, OtlpExport
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo, Vendor

pytest.importorskip("opentelemetry.sdk.metrics")
metrics_service_pb2 = pytest.importorskip("opentelemetry.proto.collector.metrics.v1.metrics_service_pb2")
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402


def row(uuid: str, kind: Kind, energy_j: float, power_w: float | None) -> DeviceEnergy:
    device = DeviceInfo(uuid, f"name-{uuid}", kind, Source.COUNTER, True, vendor=Vendor.NVIDIA)
    figure = EnergyFigure(kind, Source.COUNTER, energy_j, energy_j * 0.95, energy_j * 1.05)
    return DeviceEnergy(device, figure, power_w, samples=10, gap_count=0, gap_s=0.0)


def points(reader: InMemoryMetricReader) -> dict[str, Any]:
    data = reader.get_metrics_data()
    assert data is not None
    (resource_metrics,) = data.resource_metrics
    out: dict[str, Any] = {"resource": dict(resource_metrics.resource.attributes)}
    for scope in resource_metrics.scope_metrics:
        for metric in scope.metrics:
            out[metric.name] = metric
    return out


def test_names_units_attributes_follow_the_conventions() -> None:
    rows = [
        row("GPU-a", Kind.GPU, 1000.0, 350.0),
        row("dram-0", Kind.DRAM, 50.0, None),  # no power reading: no point, never a 0
        row("bmc", Kind.NODE, 4000.0, 900.0),
    ]
    reader = InMemoryMetricReader()
    with OtlpExport(lambda: rows, host="node7", run="job-1", reader=reader):
        got = points(reader)
    assert got["resource"]["host.name"] == "node7"
    assert got["resource"]["wattlog.run"] == "job-1"
    energy = got[OtelName.HW_ENERGY]
    assert energy.unit == "J"
    assert energy.data.is_monotonic
    assert energy.data.aggregation_temporality.name == "CUMULATIVE"
    by_id = {p.attributes["hw.id"]: p for p in energy.data.data_points}
    assert by_id["GPU-a"].value == 1000.0
    assert dict(by_id["GPU-a"].attributes) == {
        "hw.id": "GPU-a",
        "hw.type": "gpu",
        "hw.name": "name-GPU-a",
        "hw.vendor": "nvidia",
        "wattlog.source": "counter",
    }
    assert by_id["dram-0"].attributes["hw.type"] == "memory"
    assert "bmc" not in by_id  # the host's figure is never summable with its own components
    power = got[OtelName.HW_POWER]
    assert power.unit == "W"
    assert [p.attributes["hw.id"] for p in power.data.data_points] == ["GPU-a"]
    assert [p.value for p in got[OtelName.HW_HOST_ENERGY].data.data_points] == [4000.0]
    assert [p.value for p in got[OtelName.HW_HOST_POWER].data.data_points] == [900.0]


def test_config_is_checked() -> None:
    with pytest.raises(ConfigError, match="http"):
        OtlpConfig("collector:4318")
    with pytest.raises(ConfigError, match="interval"):
        OtlpConfig("http://c:4318/v1/metrics", interval_s=0)
    with pytest.raises(ConfigError, match="reader"):
        OtlpExport(list, host="h")


class Receiver:
    """Decodes each OTLP/HTTP export with the official protobuf classes; keeps the last hw.energy values."""

    def __init__(self) -> None:
        self.requests = 0
        self.energy_j: dict[str, float] = {}
        self.units: set[str] = set()

    def __call__(self, request: Request) -> Response:
        message = metrics_service_pb2.ExportMetricsServiceRequest()
        message.ParseFromString(request.get_data())
        self.requests += 1
        for resource in message.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != OtelName.HW_ENERGY:
                        continue
                    self.units.add(metric.unit)
                    for p in metric.sum.data_points:
                        attrs = {a.key: a.value.string_value for a in p.attributes}
                        self.energy_j[attrs["hw.id"]] = p.as_double
        reply = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
        return Response(reply, content_type="application/x-protobuf")


def test_otlp_totals_over_http_equal_the_ledger(tmp_path: Path, httpserver: HTTPServer) -> None:
    receiver = Receiver()
    httpserver.expect_request("/v1/metrics", method="POST").respond_with_handler(receiver)
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("otlp")
    agent = AgentConfig(port=None, flush_s=0.2, host="node1", lock_dir=tmp_path / "locks", run="otlp")
    otlp = OtlpConfig(httpserver.url_for("/v1/metrics"), interval_s=0.2, timeout_s=5.0)
    sensor = SimulatedSensor(
        simulated_gpus(2, lambda i: ConstantTrace(300.0 + 100 * i), t0_s=time.monotonic())
    )
    config = RecordingConfig(agent, spool_dir=tmp_path / "spool", otlp=otlp)
    with Recording(config, LedgerTarget(ledger, run.id), sensors=[sensor]) as recording:
        time.sleep(0.6)  # a few periodic exports before the final one
    assert recording.otlp_ok
    assert receiver.requests >= 2
    assert receiver.units == {"J"}
    ledger_j = {t.device: t.energy_j for t in ledger.energy_totals(run.id)}
    assert set(receiver.energy_j) == set(ledger_j)
    for device, joules in ledger_j.items():
        print(f"{device}: OTLP hw.energy {receiver.energy_j[device]:.3f} J, ledger {joules:.3f} J")  # -s
        assert joules > 0
        assert receiver.energy_j[device] == pytest.approx(joules, rel=1e-3)


def test_a_refused_last_export_is_reported(tmp_path: Path, httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/metrics").respond_with_data("no", status=400)
    agent = AgentConfig(port=None, flush_s=3600.0, host="node1", lock_dir=tmp_path / "locks")
    otlp = OtlpConfig(httpserver.url_for("/v1/metrics"), interval_s=3600.0, timeout_s=2.0)
    sensor = SimulatedSensor(simulated_gpus(1, lambda i: ConstantTrace(300.0), t0_s=time.monotonic()))
    with Recording(RecordingConfig(agent, otlp=otlp), sensors=[sensor]) as recording:
        pass
    assert not recording.otlp_ok


def test_wattlog_agent_exports_over_otlp(tmp_path: Path, httpserver: HTTPServer) -> None:
    from wattlog.cli import main

    receiver = Receiver()
    httpserver.expect_request("/v1/metrics", method="POST").respond_with_handler(receiver)
    args = ["agent", "--seconds", "0.3", "--simulate", "1", "--port", "-1", "--linger-s", "0"]
    args += ["--lock-dir", str(tmp_path / "locks"), "--otlp", httpserver.url_for("/v1/metrics")]
    assert main(args) == 0
    assert receiver.requests >= 1 and "GPU-sim-0000" in receiver.energy_j
    assert main(["agent", "--seconds", "0.1", "--otlp", "collector:4318"]) == 2  # one line, no traceback
