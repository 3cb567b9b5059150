"""Exporter: collectors over hand-made snapshots, the HTTP server, Pushgateway calls."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.request
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from pytest_httpserver import HTTPServer

from wattlog.errors import ConfigError, WattlogError
from wattlog.records import EnergyFigure, Kind, Source
from wattlog.telemetry.exporter import (
    AgentStateCollector,
    EnergyCollector,
    SamplerCollector,
    delete,
    push,
    serve,
)
from wattlog.telemetry.sampler import SamplerStats
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo

GPU = DeviceInfo(
    uuid="GPU-aaaa",
    name="Simulated H100",
    kind=Kind.GPU,
    source=Source.SIMULATED,
    has_counter=True,
    power_limit_w=700.0,
)
CPU = DeviceInfo(uuid="estimate-cpu", name="cpu", kind=Kind.CPU, source=Source.ESTIMATED, has_counter=False)


def snapshot() -> list[DeviceEnergy]:
    return [
        DeviceEnergy(
            GPU,
            figure=EnergyFigure(GPU.kind, GPU.source, 1500.0, 1400.0, 1600.0),
            power_w=300.0,
            samples=200,
            gap_count=1,
            gap_s=0.5,
            lost=False,
        ),
        DeviceEnergy(
            CPU,
            figure=EnergyFigure(CPU.kind, CPU.source, 250.0, 125.0, 375.0),
            power_w=None,
            samples=200,
            gap_count=0,
            gap_s=0.0,
            lost=True,
        ),
    ]


def stats(**overrides: Any) -> SamplerStats:
    values = dict(
        samples_total=400,
        reads_total=800,
        errors_total=3,
        overruns_total=2,
        achieved_period_s=0.025,
        lateness_p50_s=0.0004,
        lateness_p99_s=0.003,
        lateness_max_s=0.01,
        running=True,
        thread_cpu_s=0.5,
    )
    values.update(overrides)
    return SamplerStats(**values)


@pytest.fixture
def registry() -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=True)
    reg.register(EnergyCollector(snapshot, host="node1", run="r1"))
    reg.register(SamplerCollector(stats, host="node1", run="r1"))
    return reg


def gpu(**extra: str) -> dict[str, str]:
    return {"host": "node1", "device": "GPU-aaaa", "kind": "gpu", "source": "simulated", "run": "r1", **extra}


def test_energy_is_a_counter_in_joules_with_source_label(registry: CollectorRegistry) -> None:
    assert registry.get_sample_value("wattlog_energy_joules_total", gpu()) == 1500.0
    cpu = {"host": "node1", "device": "estimate-cpu", "kind": "cpu", "source": "estimated", "run": "r1"}
    assert registry.get_sample_value("wattlog_energy_joules_total", cpu) == 250.0
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    assert families["wattlog_energy_joules"].type == "counter"
    assert families["wattlog_power_watts"].type == "gauge"


def test_the_bands_sampling_error_parts_are_exported_so_a_sum_over_devices_can_add_them_in_quadrature() -> (
    None
):
    figure = EnergyFigure(GPU.kind, GPU.source, 1500.0, 1400.0, 1600.0, random_low_j=30.0, random_high_j=40.0)
    row = DeviceEnergy(GPU, figure=figure, power_w=300.0, samples=200, gap_count=0, gap_s=0.0)
    reg = CollectorRegistry()
    reg.register(EnergyCollector(lambda: [row], host="node1", run="r1"))
    assert reg.get_sample_value("wattlog_energy_uncertainty_joules", gpu(bound="random_low")) == 30.0
    assert reg.get_sample_value("wattlog_energy_uncertainty_joules", gpu(bound="random_high")) == 40.0
    assert reg.get_sample_value("wattlog_energy_uncertainty_joules", gpu(bound="low")) == 1400.0


def test_band_power_gaps_and_loss(registry: CollectorRegistry) -> None:
    assert registry.get_sample_value("wattlog_energy_uncertainty_joules", gpu(bound="low")) == 1400.0
    assert registry.get_sample_value("wattlog_energy_uncertainty_joules", gpu(bound="high")) == 1600.0
    assert registry.get_sample_value("wattlog_power_watts", gpu()) == 300.0
    assert registry.get_sample_value("wattlog_gaps_total", gpu()) == 1
    assert registry.get_sample_value("wattlog_gap_seconds_total", gpu()) == 0.5
    assert registry.get_sample_value("wattlog_device_lost", gpu()) == 0
    assert registry.get_sample_value("wattlog_device_samples_total", gpu()) == 200
    assert (
        registry.get_sample_value("wattlog_device_info", gpu(name="Simulated H100", has_counter="true")) == 1
    )
    cpu = {"host": "node1", "device": "estimate-cpu", "kind": "cpu", "source": "estimated", "run": "r1"}
    assert registry.get_sample_value("wattlog_device_lost", cpu) == 1
    assert registry.get_sample_value("wattlog_power_watts", cpu) is None  # no reading: no made-up value


def test_power_limit_is_exported_where_known(registry: CollectorRegistry) -> None:
    # the alert rules compare power with it (GPU idle while training, power above limit)
    assert registry.get_sample_value("wattlog_power_limit_watts", gpu()) == 700.0
    cpu = {"host": "node1", "device": "estimate-cpu", "kind": "cpu", "source": "estimated", "run": "r1"}
    assert registry.get_sample_value("wattlog_power_limit_watts", cpu) is None


def test_sampler_health(registry: CollectorRegistry) -> None:
    h = {"host": "node1", "run": "r1"}
    assert registry.get_sample_value("wattlog_samples_total", h) == 400
    assert registry.get_sample_value("wattlog_sensor_reads_total", h) == 800
    assert registry.get_sample_value("wattlog_sample_errors_total", h) == 3
    assert registry.get_sample_value("wattlog_sample_overruns_total", h) == 2
    assert registry.get_sample_value("wattlog_sample_period_seconds", h) == 0.025
    assert registry.get_sample_value("wattlog_sample_lateness_seconds", {**h, "stat": "p99"}) == 0.003
    assert registry.get_sample_value("wattlog_sampler_running", h) == 1
    assert registry.get_sample_value("wattlog_sampler_cpu_seconds_total", h) == 0.5


def test_sampler_without_ticks_exports_no_made_up_period() -> None:
    reg = CollectorRegistry()
    reg.register(
        SamplerCollector(
            lambda: stats(
                achieved_period_s=None, lateness_p50_s=None, lateness_p99_s=None, lateness_max_s=None
            ),
            "n",
        )
    )
    assert reg.get_sample_value("wattlog_sample_period_seconds", {"host": "n", "run": ""}) is None
    labels = {"host": "n", "run": "", "stat": "p50"}
    assert reg.get_sample_value("wattlog_sample_lateness_seconds", labels) is None


def test_each_scrape_reads_a_fresh_snapshot() -> None:
    calls: list[int] = []

    def counting() -> list[DeviceEnergy]:
        calls.append(1)
        return [
            DeviceEnergy(
                GPU,
                EnergyFigure(GPU.kind, GPU.source, float(len(calls)), 0.0, 2.0 * len(calls)),
                1.0,
                1,
                0,
                0.0,
            )
        ]

    reg = CollectorRegistry()
    reg.register(EnergyCollector(counting, "n"))
    labels = {"host": "n", "device": "GPU-aaaa", "kind": "gpu", "source": "simulated", "run": ""}
    first = reg.get_sample_value("wattlog_energy_joules_total", labels)
    second = reg.get_sample_value("wattlog_energy_joules_total", labels)
    assert first is not None and second is not None and second > first


def test_serve_on_port_zero_picks_a_free_port_and_closes(registry: CollectorRegistry) -> None:
    server = serve(registry, port=0)
    try:
        assert server.port > 0
        assert server.url == f"http://127.0.0.1:{server.port}/metrics"
        body = urllib.request.urlopen(server.url, timeout=5).read().decode()
        assert (
            'wattlog_energy_joules_total{device="GPU-aaaa",host="node1",kind="gpu",run="r1",'
            'source="simulated"} 1500.0' in body
        )
    finally:
        server.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(server.url, timeout=2)


def test_serve_on_a_taken_port_names_the_fix(registry: CollectorRegistry) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ConfigError, match="--port"):
            serve(registry, port=taken.getsockname()[1])


def test_push_and_delete_address_the_group(httpserver: HTTPServer, registry: CollectorRegistry) -> None:
    httpserver.expect_ordered_request("/metrics/job/train/instance/node1", method="PUT").respond_with_data("")
    httpserver.expect_ordered_request("/metrics/job/train/instance/node1", method="DELETE").respond_with_data(
        ""
    )
    push(registry, httpserver.url_for("/"), "train", {"instance": "node1"})
    delete(httpserver.url_for("/"), "train", {"instance": "node1"})
    httpserver.check_assertions()
    body = httpserver.log[0][0].get_data(as_text=True)
    assert "wattlog_energy_joules_total" in body


def test_push_to_nowhere_is_one_clear_error(registry: CollectorRegistry) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(WattlogError, match="Pushgateway"):
        push(registry, f"http://127.0.0.1:{port}", "train", timeout_s=2)


def test_every_series_carries_the_run_the_agent_exports() -> None:
    # Runs are told apart by this label, not by the scrape port: two runs on one port stay apart.
    reg = CollectorRegistry()
    reg.register(EnergyCollector(snapshot, "node1", run="run-b"))
    reg.register(SamplerCollector(stats, "node1", run="run-b"))
    samples = [s for f in reg.collect() for s in f.samples]
    assert samples and all(s.labels.get("run") == "run-b" for s in samples)


def test_agent_finished_is_zero_until_finish_and_a_scrape_sees_it() -> None:
    now = [0.0]
    reg = CollectorRegistry()
    state = AgentStateCollector("node1", "r1", clock=lambda: now[0])
    reg.register(state)
    labels = {"host": "node1", "run": "r1"}
    assert reg.get_sample_value("wattlog_agent_finished", labels) == 0
    state.written()  # the server's call once the response is written
    state.finish()
    assert not state.wait_scraped(5.0)  # one scrape seen: nothing scrapes regularly, no wait
    now[0] = 5.0
    assert reg.get_sample_value("wattlog_agent_finished", labels) == 1
    state.written()
    assert state.wait_scraped(0.0)


def test_closing_waits_about_one_scrape_interval_at_most() -> None:
    now = [0.0]
    state = AgentStateCollector("node1", "r1", clock=lambda: now[0])
    for t in (0.0, 0.01):  # scraped every 10 ms, never after the finish
        now[0] = t
        list(state.collect())
        state.written()
    state.finish()
    started = time.monotonic()
    assert not state.wait_scraped(30.0)
    assert time.monotonic() - started < 5.0  # 1.5 x 10 ms + 0.5 s, not the 30 s bound


def test_closing_the_metrics_server_names_a_scrape_stuck_in_a_collector() -> None:
    """A scrape that never returns cannot hold the agent's exit: close() gives up on it and names it."""
    release = threading.Event()

    class Stuck:
        def collect(self) -> Any:
            release.wait(30.0)
            return iter(())

    registry = CollectorRegistry()
    registry.register(Stuck())  # type: ignore[arg-type]
    server = serve(registry, port=0)
    server.server.close_timeout_s = 0.5
    scrape = threading.Thread(target=lambda: _quietly(server.url), daemon=True)
    scrape.start()
    time.sleep(0.3)  # the scrape is inside collect()
    started = time.monotonic()
    stuck = server.close()
    assert time.monotonic() - started < 5.0
    assert stuck and all(isinstance(name, str) for name in stuck)
    release.set()


def _quietly(url: str) -> None:
    with contextlib.suppress(OSError):  # the server closes under the scrape
        urllib.request.urlopen(url, timeout=10).close()


def test_a_lost_device_exports_no_power_but_its_lost_state() -> None:
    """A lost GPU kept exporting its last reading (647.81 W, flat) until the agent ended (issue 38):
    cluster power counted a dead device and PowerAboveLimit fired for it. Its series ends instead."""
    figure = EnergyFigure(GPU.kind, GPU.source, 1500.0, 1400.0, 1600.0)
    row = DeviceEnergy(GPU, figure=figure, power_w=647.81, samples=200, gap_count=1, gap_s=19.0, lost=True)
    reg = CollectorRegistry()
    reg.register(EnergyCollector(lambda: [row], host="node1", run="r1"))
    assert reg.get_sample_value("wattlog_power_watts", gpu()) is None
    assert reg.get_sample_value("wattlog_device_lost", gpu()) == 1
    assert reg.get_sample_value("wattlog_energy_joules_total", gpu()) == 1500.0  # what it used stays counted
