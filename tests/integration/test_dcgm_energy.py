"""`wattlog table --prometheus URL --dcgm` against a real Prometheus scraping a fake dcgm-exporter."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from tests.integration.fake_dcgm import FakeDcgmExporter, FakeGpu
from wattlog.accounting.fleet.dcgm_energy import DCGM_SOURCE, dcgm_energy
from wattlog.cli import app

pytestmark = pytest.mark.integration


def test_energy_of_a_range_from_dcgm_exporter_with_a_counter_reset(servers) -> None:  # type: ignore[no-untyped-def]
    t0 = time.time()
    gpus = [
        FakeGpu("node01", 0, "GPU-aaaa", 300.0, job="4242"),
        FakeGpu("node01", 1, "GPU-bbbb", 200.0, job="4242", reset_at_s=t0 + 5.0),  # driver reloaded at +5 s
        FakeGpu("node02", 0, "GPU-cccc", 100.0, job="4242"),
        FakeGpu("node03", 0, "GPU-dddd", 700.0, job="9999"),  # another job's node
    ]
    exporter = FakeDcgmExporter(gpus, t0)
    try:
        prometheus = servers.prometheus([exporter.address], scrape_interval_s=1.0)
        prometheus.wait_for(
            "count_over_time(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[1m]) >= 11",
            lambda r: len(r) == 4,
            timeout_s=40,
        )
        end_s = time.time() - 0.5
        start_s = end_s - 8.0  # the reset at t0 + 5 s lies inside
        rows = {r.device: r for r in dcgm_energy(prometheus.url, start_s, end_s, hosts=["node01", "node02"])}
        assert set(rows) == {"GPU-aaaa", "GPU-bbbb", "GPU-cccc"}
        assert {r.source for r in rows.values()} == {DCGM_SOURCE} and rows["GPU-aaaa"].kind == "gpu"
        assert rows["GPU-aaaa"].energy_j == pytest.approx(300.0 * 8.0, rel=0.1)  # mJ -> J
        # Across the reset increase() counts from 0 again: at most one scrape's energy is lost, where a
        # last-minus-first difference would be ~1000 J short.
        assert rows["GPU-bbbb"].energy_j == pytest.approx(200.0 * 8.0, rel=0.15)
        assert rows["GPU-bbbb"].low_j < rows["GPU-bbbb"].energy_j < rows["GPU-bbbb"].high_j
        by_job = dcgm_energy(prometheus.url, start_s, end_s, job="9999")
        assert [r.device for r in by_job] == ["GPU-dddd"]
        by_gpu = dcgm_energy(prometheus.url, start_s, end_s, hosts=["node01"], gpus=["1"])
        assert [r.device for r in by_gpu] == ["GPU-bbbb"]

        result = CliRunner().invoke(
            app,
            [
                "table",
                "--prometheus",
                prometheus.url,
                "--dcgm",
                "--start",
                f"{start_s:.3f}",
                "--end",
                f"{end_s:.3f}",
                "--hosts",
                "node[01-02]",
                "--site",
                "jupiter",
                "--format",
                "csv",
            ],
        )
        assert result.exit_code == 0, result.output
        assert "counter (dcgm-exporter)" in result.output and "3 GPUs" in result.output
    finally:
        exporter.close()
