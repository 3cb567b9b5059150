"""A normal end is no alert, a crash is: the shipped WattlogAgentDown rule on a real Prometheus.

Two agents are scraped every second. One ends normally (close() serves until a scrape has read
`wattlog_agent_finished 1`), the other stops answering without that mark, as a crash does.
Both targets go down; only the crashed one's run is alerted.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tests.integration.conftest import Servers
from tests.integration.test_alerting import test_rules
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.exporter import AgentStateCollector, serve
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus

pytestmark = pytest.mark.integration


def test_agent_down_fires_for_a_crash_and_not_after_a_normal_end(servers: Servers, tmp_path: Path) -> None:
    config = AgentConfig(port=0, host="node-a", run="ended", lock_dir=tmp_path / "locks", linger_s=10.0)
    ended = Agent(config, sensors=[SimulatedSensor(simulated_gpus(1, t0_s=time.monotonic()))]).start()
    crashing = CollectorRegistry()
    crashing.register(AgentStateCollector("node-b", "crashed"))
    crashed = serve(crashing, port=0)
    assert ended.metrics_url is not None
    port_a = ended.metrics_url.split(":")[-1].split("/")[0]
    job = {
        "job_name": "trainers",  # any name: the rule names no job
        "honor_labels": True,
        "static_configs": [
            {"targets": [f"127.0.0.1:{port_a}"], "labels": {"host": "node-a"}},
            {"targets": [f"127.0.0.1:{crashed.port}"], "labels": {"host": "node-b"}},
        ],
    }
    prometheus = servers.prometheus(rule_files=[test_rules(tmp_path)], extra_scrape_configs=[job])
    prometheus.wait_for(
        "count_over_time(wattlog_agent_finished[1m]) >= 3", lambda r: len(r) == 2, timeout_s=30
    )
    ended.close()  # waits for the next scrape to read the finished mark
    crashed.close()  # no mark: a crash
    down = prometheus.wait_for('up{job="trainers"} == 0', lambda r: len(r) == 2, timeout_s=30)
    assert {s["metric"]["host"] for s in down} == {"node-a", "node-b"}
    alerts = prometheus.wait_for('ALERTS{alertname="WattlogAgentDown", alertstate="firing"}', timeout_s=30)
    time.sleep(3)  # room for a wrong alert on the normally ended agent to show up
    alerts = prometheus.query('ALERTS{alertname="WattlogAgentDown"}')
    assert [(a["metric"]["host"], a["metric"].get("run")) for a in alerts] == [("node-b", "crashed")]
    finished = prometheus.query('last_over_time(wattlog_agent_finished{run="ended"}[5m])')
    assert finished and finished[0]["value"][1] == "1"
