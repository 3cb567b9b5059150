"""Fault: the final-scrape linger (a preempted run must be closed within its grace period).

On the old code the agent lingered (30 s by default) for Prometheus's next scrape before the
run was ended, so a Kubernetes kill after the 30 s grace period landed first and the run stayed
`running`; and the "seen" flag was set whenever the collector ran (a Pushgateway push, a scrape
whose client went away), not when a scrape's response was written.
"""

from __future__ import annotations

import threading
import urllib.request
from pathlib import Path

from prometheus_client import CollectorRegistry

from wattlog.accounting.ledger import Ledger, Status, make_engine
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.exporter import AgentStateCollector, serve
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.session import RunSession, SessionConfig


def test_the_default_linger_fits_inside_a_preemption_grace_period() -> None:
    assert 0 < AgentConfig().linger_s < 10.0  # old: 30 s, the whole of Kubernetes' default grace


def test_collecting_without_a_written_response_is_not_a_final_scrape() -> None:
    now = [0.0]
    state = AgentStateCollector("node1", "r1", clock=lambda: now[0])
    registry = CollectorRegistry()
    registry.register(state)
    server = serve(registry, port=0, written=state.written)
    try:
        for t in (0.0, 1.0):  # two scrapes: it scrapes regularly
            now[0] = t
            urllib.request.urlopen(server.url, timeout=5).read()
        state.finish()
        list(registry.collect())  # a Pushgateway push collects too: no scrape was answered
        assert not state.wait_scraped(0.0)  # old code: True
        body = urllib.request.urlopen(server.url, timeout=5).read().decode()
        assert 'wattlog_agent_finished{host="node1",run="r1"} 1.0' in body
        assert state.wait_scraped(5.0)
    finally:
        server.close()


def test_the_run_is_ended_before_the_agent_lingers_for_the_final_scrape(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    agent = AgentConfig(port=0, flush_s=0.05, lock_dir=tmp_path, linger_s=60.0)
    session = RunSession(
        SessionConfig("g", db=db, agent_config=agent), sensors=[SimulatedSensor(simulated_gpus(1))]
    )
    session.start()
    assert session.metrics_url is not None and session.agent is not None
    for _ in range(2):  # scraped regularly (every few ms): closing will wait for one more scrape
        urllib.request.urlopen(session.metrics_url, timeout=5).read()
    status_while_lingering: list[str] = []
    lingering = threading.Event()
    original = session.agent.linger

    def linger() -> None:
        status_while_lingering.append(Ledger(make_engine(db)).get_run("g").status)
        lingering.set()
        original()

    session.agent.linger = linger  # type: ignore[method-assign]
    url = session.metrics_url

    def final_scrape() -> None:
        lingering.wait(30)
        urllib.request.urlopen(url, timeout=5).read()

    scraper = threading.Thread(target=final_scrape)
    scraper.start()
    session.close(Status.PREEMPTED)
    scraper.join(30)
    assert status_while_lingering == ["preempted"]  # old code: the run was still running
