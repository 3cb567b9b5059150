"""energy_from_prometheus against a real Prometheus that scraped the real exporter (loopback)."""

from __future__ import annotations

import time

import pytest
from prometheus_client import CollectorRegistry

from wattlog.accounting.publishing.prometheus_energy import PrometheusError, energy_from_prometheus
from wattlog.records import EnergyFigure, Kind, Source
from wattlog.telemetry.exporter import EnergyCollector, serve
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo

pytestmark = pytest.mark.integration

POWER_W = 250.0


def test_energy_of_a_window_matches_the_exporters_counter(servers) -> None:  # type: ignore[no-untyped-def]
    gpu = DeviceInfo("GPU-abc", "simulated H100", Kind.GPU, Source.SIMULATED, has_counter=True)
    t0 = time.time()

    def snapshot() -> list[DeviceEnergy]:
        energy_j = POWER_W * (time.time() - t0)  # a device drawing a constant 250 W
        figure = EnergyFigure(gpu.kind, gpu.source, energy_j, 0.95 * energy_j, 1.05 * energy_j)
        return [DeviceEnergy(gpu, figure, POWER_W, 1, 0, 0.0)]

    registry = CollectorRegistry()
    registry.register(EnergyCollector(snapshot, host="node0"))
    exporter = serve(registry, port=0)
    try:
        prometheus = servers.prometheus([f"127.0.0.1:{exporter.port}"], scrape_interval_s=1.0)
        scraped = 'count_over_time(wattlog_energy_joules_total{host="node0"}[1m]) >= 6'
        prometheus.wait_for(scraped, timeout_s=30)
        end_s = time.time() - 0.5
        start_s = end_s - 4.0
        [row] = energy_from_prometheus(prometheus.url, start_s, end_s, matchers={"host": "node0"})
        assert (row.host, row.device, row.kind, row.source) == ("node0", "GPU-abc", "gpu", "simulated")
        # increase() extrapolates the scraped samples to the window's edges: a constant draw comes out exact
        # up to scrape timing jitter
        assert row.energy_j == pytest.approx(POWER_W * 4.0, rel=0.15)
        assert row.low_j == pytest.approx(0.95 * row.energy_j, rel=1e-3)
        assert row.high_j == pytest.approx(1.05 * row.energy_j, rel=1e-3)
        assert energy_from_prometheus(prometheus.url, start_s, end_s, matchers={"host": "other"}) == []
    finally:
        exporter.close()
    prometheus.stop()
    with pytest.raises(PrometheusError, match="cannot reach Prometheus"):
        energy_from_prometheus(prometheus.url, start_s, end_s, timeout_s=2)
