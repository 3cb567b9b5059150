"""Joining a sidecar agent: devices it holds are counted from its metrics, once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.errors import SensorError
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.sensors.estimate import CPU_UUID, DRAM_UUID, EstimateSensor
from wattlog.trainer.join import intervals_between, read_counters
from wattlog.trainer.tracker import Tracker


def test_agent_names_the_holder_of_each_device_it_skipped(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    with Agent(AgentConfig(port=0, lock_dir=locks), sensors=[EstimateSensor()]) as holder:
        second = Agent(AgentConfig(port=0, lock_dir=locks), sensors=[EstimateSensor()])
        with second:
            assert second.devices == []
            assert second.held_elsewhere == {CPU_UUID: holder.metrics_url, DRAM_UUID: holder.metrics_url}


def test_intervals_are_counter_differences_and_skip_resets() -> None:
    def counter(device: str, joules: float) -> EnergyTotal:
        return EnergyTotal.of("n", device, "cpu", "estimated", joules, joules * 0.9, joules * 1.1)

    start = {"a": counter("a", 100.0), "b": counter("b", 50.0)}
    end = {"a": counter("a", 160.0), "b": counter("b", 10.0)}  # b's agent restarted: skipped
    rows = intervals_between(start, end, 1.0, 2.0)
    assert [(r.device, r.energy_j) for r in rows] == [("a", 60.0)]
    assert rows[0].low_j <= 60.0 <= rows[0].high_j and rows[0].source == "estimated"


def test_unreachable_agent_is_a_sensor_error() -> None:
    with pytest.raises(SensorError, match="cannot read"):
        read_counters("http://127.0.0.1:9/metrics", ["x"], timeout_s=1.0)


def test_a_counter_with_labels_wattlog_does_not_know_is_a_sensor_error(httpserver: HTTPServer) -> None:
    """Another process's figures are validated: an unknown kind is refused, never counted as another."""
    served = 'wattlog_energy_joules_total{host="n",device="x",kind="toaster",source="counter"} 5.0\n'
    httpserver.expect_request("/metrics").respond_with_data(served, content_type="text/plain")
    with pytest.raises(SensorError, match="cannot read.*toaster"):
        read_counters(httpserver.url_for("/metrics"), ["x"], timeout_s=5.0)
    good = served.replace("toaster", "gpu")
    httpserver.clear()
    httpserver.expect_request("/metrics").respond_with_data(good, content_type="text/plain")
    (figure,) = read_counters(httpserver.url_for("/metrics"), ["x"], timeout_s=5.0).values()
    assert (figure.kind, figure.source, figure.energy_j, figure.low_j) == ("gpu", "counter", 5.0, 5.0)


def test_tracker_joins_the_sidecar_that_holds_the_node(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    db = f"sqlite:///{tmp_path / 'l.db'}"
    sidecar = Agent(AgentConfig(port=0, host="sidecar", lock_dir=locks), sensors=[EstimateSensor()])
    with sidecar:
        config = AgentConfig(port=0, host="tracker", flush_s=0.1, lock_dir=locks)
        with Tracker("joined", db=db, sensors=[EstimateSensor()], agent_config=config, gc_every=None) as t:
            assert t.agent is not None and t.agent.devices == []
            # Past one of the estimate's 1 s publications: its counters advance once a second, so a
            # shorter join could read the same value at both ends (0 J, honestly).
            for _ in range(15):
                t.step(loss=1.0, tokens=10)
                time.sleep(0.1)
    totals = Ledger(make_engine(db)).energy_totals("joined")
    assert sorted(t.device for t in totals) == sorted([CPU_UUID, DRAM_UUID])
    assert {t.host for t in totals} == {"sidecar"} and {t.source for t in totals} == {"estimated"}
    assert all(t.energy_j > 0 for t in totals)
