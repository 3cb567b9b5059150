"""bench/cluster.py at a small scale: 4 node processes x 2 simulated GPUs, one PostgreSQL ledger,
Prometheus with file service discovery remote-writing to VictoriaMetrics. The three totals agree
and every node is present in each."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.cluster import ClusterConfig, prepare, run_cluster, scrape_config
from bench.cluster_report import TARGET
from tests.integration.conftest import Servers
from tests.integration.postgres import available, running_postgres

pytestmark = pytest.mark.integration


def _config(tmp_path: Path, **changes: object) -> ClusterConfig:
    config = ClusterConfig(
        nodes=4,
        gpus=2,
        seconds=6.0,
        period_s=0.25,
        flush_s=1.0,
        scrape_s=1.0,
        start_batch=4,
        run="cluster-test",
        workdir=tmp_path / "cluster",
    )
    for name, value in changes.items():
        setattr(config, name, value)
    return config


def _run(servers: Servers, config: ClusterConfig):  # type: ignore[no-untyped-def]
    if not available():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL 15 binaries missing in CI: apt-get install -y postgresql")
        pytest.skip("PostgreSQL 15 binaries not installed (/usr/lib/postgresql/15/bin)")
    prepare(config)
    victoria = servers.victoria_metrics()
    prometheus = servers.prometheus(
        scrape_interval_s=config.scrape_s,
        extra_scrape_configs=[scrape_config(config)],
        remote_write_urls=[f"{victoria.url}/api/v1/write"],
    )
    with running_postgres() as postgres:
        return run_cluster(config, postgres.create_database("cluster"), prometheus, victoria)


@pytest.mark.timeout(240)
def test_four_nodes_ledger_prometheus_and_victoria_metrics_agree(servers: Servers, tmp_path: Path) -> None:
    report = _run(servers, _config(tmp_path))
    assert report.problems == []
    hosts = {"node00", "node01", "node02", "node03"}
    assert report.ways.hosts == {"ledger": hosts, "Prometheus": hosts, "VictoriaMetrics": hosts}
    assert report.final_scraped == hosts  # every agent waited for the scrape of its final counters
    assert report.ways.joules["ledger"] > 0
    for store, diff in report.differences().items():
        assert abs(diff) <= TARGET, (store, diff)
    assert not report.failed_starts and set(report.exit_codes.values()) == {0}
    assert report.ledger.totals_kept and report.ledger.hourly_rows < report.ledger.raw_rows
    assert "4 of 4 nodes measured" in report.ways.rows[0].notes


@pytest.mark.timeout(240)
def test_two_of_four_nodes_sampled_every_store_extrapolates_alike(servers: Servers, tmp_path: Path) -> None:
    report = _run(servers, _config(tmp_path, sample_nodes=2))
    assert report.problems == []
    assert report.ways.hosts["ledger"] == {"node00", "node02"} == report.ways.hosts["Prometheus"]
    assert report.final_scraped == {"node00", "node02"}
    assert all("extrapolated" in row.energy_source for row in report.ways.rows)
    assert "2 of 4 nodes measured" in report.ways.rows[0].notes
