"""The node agent: composition, flushing to sinks, device locks, serving, pushing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tests.telemetry.fakes import ConstantSensor
from tests.waiting import wait_until
from wattlog.errors import ConfigError, SensorUnavailable, WattlogError
from wattlog.records import BandRevision, EnergyInterval, Gap, Source
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.telemetry.types import DeviceInfo

POWER_W = 200.0  # ConstantSensor's default


class BrokenSensor(ConstantSensor):
    def devices(self) -> list[DeviceInfo]:
        raise SensorUnavailable("no driver here")


class ListSink:
    def __init__(self, failures: int = 0) -> None:
        self.calls: list[tuple[list[EnergyInterval], list[Gap]]] = []
        self.failures = failures
        self.closed = False

    def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("disk full")
        self.calls.append((list(intervals), list(gaps)))

    def close(self) -> None:
        self.closed = True


def config(tmp_path: Path, **changes: object) -> AgentConfig:
    values: dict[str, object] = {
        "port": None,
        "flush_s": 3600.0,
        "host": "node1",
        "lock_dir": tmp_path / "locks",
    }
    values.update(changes)
    return AgentConfig(**values)  # type: ignore[arg-type]


def simulated(n: int = 2) -> SimulatedSensor:
    return SimulatedSensor(simulated_gpus(n, lambda i: ConstantTrace(POWER_W), t0_s=time.monotonic()))


def wait_for_samples(agent: Agent, n: int = 4) -> None:
    wait_until(lambda: min((e.samples for e in agent.snapshot()), default=0) >= n, 10, "no readings", 0.01)


@pytest.mark.parametrize(
    "changes",
    [
        {"period_s": 0},
        {"flush_s": 0.01, "period_s": 0.025},
        {"port": 70000},
        {"pushgateway_url": "gw:9091"},
        {"host": ""},
    ],
)
def test_config_rejects_bad_values(tmp_path: Path, changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        config(tmp_path, **changes)


def test_constructor_does_no_io(tmp_path: Path) -> None:
    agent = Agent(config(tmp_path, port=0), sensors=[simulated()])
    assert not (tmp_path / "locks").exists()
    assert agent.metrics_url is None and agent.snapshot() == [] and agent.stats() is None
    agent.close()  # closing an agent never started is harmless


def test_sinks_get_every_joule_and_metrics_are_served(tmp_path: Path) -> None:
    sink = ListSink()
    with Agent(config(tmp_path, port=0), sensors=[simulated(2)], sinks=[sink]) as agent:
        assert agent.metrics_url is not None
        wait_for_samples(agent, 12)  # > 2 counter updates (every 100 ms): energy > 0
        agent.flush()
        body = urllib.request.urlopen(agent.metrics_url, timeout=5).read().decode()
        assert (
            'wattlog_energy_joules_total{device="GPU-sim-0001",host="node1",kind="gpu",run="",source="simulated"}'
            in body
        )
        assert "wattlog_samples_total" in body
        url = agent.metrics_url
    assert sink.closed and len(sink.calls) == 2  # the explicit flush and the final one at close
    final = {e.device.uuid: e.energy_j for e in agent.snapshot()}
    written: dict[str, float] = {}
    for intervals, _ in sink.calls:
        for row in intervals:
            assert row.source is Source.SIMULATED and row.host == "node1"
            written[row.device] = written.get(row.device, 0.0) + row.energy_j
    assert written == pytest.approx(final, rel=1e-9)
    assert all(v > 0 for v in final.values())
    stats = agent.stats()
    assert stats is not None and not stats.running and stats.samples_total >= 4
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)


def test_a_failing_sink_gets_its_rows_again(tmp_path: Path) -> None:
    sink = ListSink(failures=1)
    with Agent(config(tmp_path), sensors=[simulated(1)], sinks=[sink]) as agent:
        wait_for_samples(agent)
        agent.flush()  # fails: rows kept
        assert sink.calls == []
        wait_for_samples(agent, 8)
    [(rows, _)] = sink.calls  # the final flush carried both intervals
    assert len(rows) == 2
    assert sum(r.energy_j for r in rows) == pytest.approx(agent.snapshot()[0].energy_j, rel=1e-9)


def test_two_agents_never_measure_the_same_device(tmp_path: Path) -> None:
    first = Agent(config(tmp_path, port=0), sensors=[ConstantSensor()]).start()
    try:
        second_sensor = ConstantSensor()
        second = Agent(config(tmp_path), sensors=[second_sensor]).start()
        assert [d.uuid for d in first.devices] == ["GPU-lock-test"]
        assert second.devices == [] and second_sensor.closed
        assert second.notes == [f"GPU-lock-test is measured by agent pid {os.getpid()} ({first.metrics_url})"]
        second.close()
    finally:
        first.close()
    third = Agent(config(tmp_path), sensors=[ConstantSensor()]).start()
    assert [d.uuid for d in third.devices] == ["GPU-lock-test"]  # released at close
    third.close()


def test_an_agent_in_another_process_holds_the_device(tmp_path: Path) -> None:
    script = f"""
import sys
from pathlib import Path
from tests.telemetry.fakes import ConstantSensor
from wattlog.telemetry.agent import Agent, AgentConfig
agent = Agent(AgentConfig(port=None, host="other", lock_dir=Path({str(tmp_path / "locks")!r})),
              sensors=[ConstantSensor()]).start()
print(len(agent.devices), flush=True)
sys.stdin.read()
agent.close()
"""
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "1"
        with Agent(config(tmp_path), sensors=[ConstantSensor()]) as agent:
            assert agent.devices == []
            assert agent.notes == [f"GPU-lock-test is measured by agent pid {child.pid}"]
    finally:
        child.kill()
        child.wait(timeout=10)


def test_simulated_devices_are_per_process_and_never_locked(tmp_path: Path) -> None:
    with (
        Agent(config(tmp_path), sensors=[simulated(1)]) as a,
        Agent(config(tmp_path), sensors=[simulated(1)]) as b,
    ):
        assert len(a.devices) == len(b.devices) == 1


def test_a_broken_sensor_is_a_note_and_the_others_go_on(tmp_path: Path) -> None:
    with Agent(config(tmp_path), sensors=[BrokenSensor(), simulated(1)]) as agent:
        assert [d.uuid for d in agent.devices] == ["GPU-sim-0000"]
        assert agent.notes == ["BrokenSensor skipped: no driver here"]


def test_start_twice_is_an_error(tmp_path: Path) -> None:
    with (
        Agent(config(tmp_path), sensors=[simulated(1)]) as agent,
        pytest.raises(WattlogError, match="already"),
    ):
        agent.start()


def test_pushes_at_flush(tmp_path: Path, httpserver: HTTPServer) -> None:
    httpserver.expect_request("/metrics/job/wattlog/instance/node1", method="PUT").respond_with_data("")
    with Agent(config(tmp_path, pushgateway_url=httpserver.url_for("/")), sensors=[simulated(1)]) as agent:
        wait_for_samples(agent)
    httpserver.check_assertions()
    body = httpserver.log[-1][0].get_data(as_text=True)
    assert 'wattlog_energy_joules_total{device="GPU-sim-0000"' in body


def test_run_label_and_finished_mark_reach_a_scrape_before_the_agent_closes(tmp_path: Path) -> None:
    # A scrape during close() sees wattlog_agent_finished 1: `up == 0` afterwards is a normal end.
    bodies: list[str] = []
    agent = Agent(config(tmp_path, port=0, run="run-x", linger_s=10.0), sensors=[simulated(1)])
    agent.start()
    url = agent.metrics_url
    assert url is not None
    first = urllib.request.urlopen(url, timeout=5).read().decode()
    assert 'wattlog_agent_finished{host="node1",run="run-x"} 0.0' in first
    assert 'run="run-x"' in first.split("wattlog_energy_joules_total{", 1)[1].split("}", 1)[0]
    time.sleep(0.2)
    urllib.request.urlopen(url, timeout=5).read()  # scraped every 0.2 s: the agent waits ~one interval

    def scrape_while_closing() -> None:
        time.sleep(0.2)
        bodies.append(urllib.request.urlopen(url, timeout=5).read().decode())

    scraper = threading.Thread(target=scrape_while_closing)
    scraper.start()
    agent.close()  # lingers until the scrape above has read the mark
    scraper.join()
    assert 'wattlog_agent_finished{host="node1",run="run-x"} 1.0' in bodies[0]


def test_linger_must_not_be_negative(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="linger_s"):
        config(tmp_path, linger_s=-1.0)


def test_close_names_a_flush_thread_stuck_in_a_sink_write_then_still_flushes_every_joule(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entered, release = threading.Event(), threading.Event()

    class StuckSink(ListSink):
        def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
            if not entered.is_set():  # the flush thread's first write hangs until released
                entered.set()
                release.wait()
            super().write(intervals, gaps)

    sink = StuckSink()
    agent = Agent(config(tmp_path, flush_s=0.05, stop_timeout_s=0.2), sensors=[simulated(1)], sinks=[sink])
    agent.start()
    assert entered.wait(10.0)
    # the stuck write is released after the timeout, so close() can hand over the last interval
    threading.Timer(1.0, release.set).start()
    with caplog.at_level("WARNING", logger="wattlog.telemetry.agent"):
        agent.close()
    assert agent.stuck_threads == ["wattlog-flush"]
    assert "wattlog-flush is stuck in a sink write" in caplog.text
    stored_j = sum(row.energy_j for rows, _ in sink.calls for row in rows)
    assert stored_j == pytest.approx(sum(d.energy_j for d in agent.snapshot()), rel=1e-9)


def test_the_agent_lets_each_vendor_backend_read_its_own_visibility(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HIP_VISIBLE_DEVICES=1 selects AMD's second GPU; CUDA's rules applied to AMD would measure both
    from wattlog.clock import SystemClock
    from wattlog.telemetry.sensors import discovery
    from wattlog.telemetry.sensors.amd import AmdBackend
    from wattlog.telemetry.sensors.fake_amdsmi import FakeAmdSmi
    from wattlog.telemetry.sensors.simulated import SimulatedGpu
    from wattlog.telemetry.types import Vendor

    amd = [
        SimulatedGpu(f"GPU-amd-{i}", "AMD Instinct MI300X", ConstantTrace(POWER_W), vendor=Vendor.AMD)
        for i in range(2)
    ]
    smi = FakeAmdSmi(amd, SystemClock())
    monkeypatch.setattr(discovery, "GPU_BACKENDS", (lambda: AmdBackend(smi, check_s=0),))
    with Agent(config(tmp_path, port=None), environ={"HIP_VISIBLE_DEVICES": "1"}) as agent:
        assert [d.uuid for d in agent.devices if d.vendor is Vendor.AMD] == ["GPU-amd-1"]


class RevisionListSink(ListSink):
    def __init__(self, failures: int = 0) -> None:
        super().__init__(failures)
        self.order: list[str] = []
        self.revisions: list[BandRevision] = []

    def write(self, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap]) -> None:
        super().write(intervals, gaps)
        self.order.append("rows")

    def write_revisions(self, revisions: Sequence[BandRevision]) -> None:
        self.order.append("revisions")
        self.revisions += revisions


def test_band_revisions_reach_a_sink_that_stores_them_after_their_rows(tmp_path: Path) -> None:
    sink = RevisionListSink(failures=1)
    revision = BandRevision(
        "node1", "gpu", 0.0, 10.0, "band revised: phase lock ruled out", (1, 0, 0, 0, 0, 0)
    )
    with Agent(config(tmp_path), sensors=[simulated(1)], sinks=[sink]) as agent:
        wait_for_samples(agent)
        taken = iter([[revision]])
        agent._integrator.take_revisions = lambda: next(taken, [])  # type: ignore[union-attr, method-assign]
        agent.flush()  # the rows fail: the revision waits for them
        assert sink.order == []
        agent.flush()
        assert sink.order == ["rows", "revisions"] and sink.revisions == [revision]
