"""A real Prometheus scrapes a real agent; a real Pushgateway receives its push (all on 127.0.0.1)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import Servers
from tests.integration.servers import http_get
from tests.waiting import wait_until
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.exporter import delete
from wattlog.telemetry.sensors.simulated import SensorModel, SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.telemetry.types import DeviceEnergy

pytestmark = pytest.mark.integration

POWER_W = 300.0
GPUS = 2
HOST = "itest"
SELECTOR = f'wattlog_energy_joules_total{{host="{HOST}"}}'


def constant_gpus() -> SimulatedSensor:
    """GPUs at a constant 300 W read by an ideal sensor: the expected energy is power x time."""
    gpus = simulated_gpus(
        GPUS, lambda i: ConstantTrace(POWER_W), model=SensorModel.ideal(), t0_s=time.monotonic()
    )
    return SimulatedSensor(gpus)


def test_prometheus_stores_what_the_agent_served_and_increase_matches(
    servers: Servers, tmp_path: Path
) -> None:
    agent = Agent(AgentConfig(port=0, host=HOST, flush_s=3600, lock_dir=tmp_path), sensors=[constant_gpus()])
    served: set[tuple[str, float]] = set()  # every (device, energy) a scrape was given
    lock = threading.Lock()

    def recording_snapshot() -> list[DeviceEnergy]:
        rows = Agent.snapshot(agent)
        with lock:
            served.update((r.device.uuid, r.energy_j) for r in rows)
        return rows

    agent.snapshot = recording_snapshot  # type: ignore[method-assign]  # the collector reads through it
    with agent:
        assert agent.metrics_url is not None
        prometheus = servers.prometheus([agent.metrics_url.split("/")[2]], scrape_interval_s=1.0)
        prometheus.wait_for(
            f"count_over_time({SELECTOR}[1m]) >= 6",
            lambda result: len(result) == GPUS,
            timeout_s=30,  # the first samples show ~6-7 s after Prometheus starts
        )
        matrix = prometheus.query(f"{SELECTOR}[1m]")
    assert len(matrix) == GPUS
    for series in matrix:
        labels = series["metric"]
        assert (labels["host"], labels["kind"], labels["source"]) == (HOST, "gpu", "simulated")
        points = [(float(t), float(v)) for t, v in series["values"]]
        with lock:
            # Prometheus stored exactly the values the exporter served: no rounding on the way
            assert all((labels["device"], v) in served for _, v in points)
        values = [v for _, v in points]
        assert values == sorted(values) and values[0] < values[-1]  # a counter: never goes down
        (t0, v0), (t1, v1) = points[0], points[-1]
        # The integrator's energy between two scrapes is power x time, up to when each snapshot was taken
        # relative to its scrape timestamp and the sampler's 25 ms grid: tens of ms at each end of >= 5 s.
        assert v1 - v0 == pytest.approx(POWER_W * (t1 - t0), rel=0.05)
        # increase() over a window reaching 1 ms before the first scrape: Prometheus extrapolates by
        # that 1 ms only (factor (span + 0.001) / span), so it equals the counter's difference to 1e-3.
        window_ms = round((t1 - t0) * 1000) + 1
        [result] = prometheus.query(
            f'increase(wattlog_energy_joules_total{{host="{HOST}",device="{labels["device"]}"}}[{window_ms}ms])',
            at_s=t1,
        )
        assert float(result["value"][1]) == pytest.approx(v1 - v0, rel=1e-3)


def test_pushgateway_receives_the_final_values_and_forgets_them_on_delete(
    servers: Servers, tmp_path: Path
) -> None:
    gateway = servers.pushgateway()
    config = AgentConfig(
        port=None, host=HOST, pushgateway_url=gateway.url, push_job="itest-job", lock_dir=tmp_path
    )
    with Agent(config, sensors=[constant_gpus()]) as agent:
        wait_until(lambda: min(e.samples for e in agent.snapshot()) >= 8, 10, "fewer than 8 readings", 0.01)
    final = {e.device.uuid: e.energy_j for e in agent.snapshot()}  # close() pushed these
    pushed = _energy_series(http_get(f"{gateway.url}/metrics").decode())
    assert pushed == {("itest-job", HOST, uuid): energy for uuid, energy in final.items()}
    delete(gateway.url, "itest-job", {"instance": HOST})
    assert _energy_series(http_get(f"{gateway.url}/metrics").decode()) == {}


def _energy_series(exposition: str) -> dict[tuple[str, str, str], float]:
    return {
        (s.labels["job"], s.labels["instance"], s.labels["device"]): s.value
        for family in text_string_to_metric_families(exposition)
        if family.name == "wattlog_energy_joules"
        for s in family.samples
        if s.name == "wattlog_energy_joules_total"
    }
