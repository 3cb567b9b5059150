"""dcgm-exporter energy: the query it sends, mJ -> J, its source label and band, SLURM node lists."""

from __future__ import annotations

import io
import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from wattlog.accounting.carbon.catalog import save_series
from wattlog.accounting.carbon.intensity import HourlySeries, IntensityRef
from wattlog.accounting.carbon.sites import Site
from wattlog.accounting.fleet.dcgm_energy import DCGM_SOURCE, dcgm_energy, dcgm_row
from wattlog.accounting.it_energy import energy_label
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.publishing.footprint import CarbonPath
from wattlog.cli import app
from wattlog.errors import ConfigError
from wattlog.telemetry.job import expand_nodelist


def answering(*samples: dict[str, Any]) -> tuple[list[str], Any]:
    asked: list[str] = []

    def opener(url: str, timeout: float) -> io.BytesIO:
        asked.append(urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["query"][0])
        body = {"status": "success", "data": {"resultType": "vector", "result": list(samples)}}
        return io.BytesIO(json.dumps(body).encode())

    return asked, opener


def test_query_selects_hosts_gpus_and_job_and_converts_millijoules() -> None:
    sample = {"metric": {"Hostname": "node01", "gpu": "0", "UUID": "GPU-a"}, "value": [0, "3600000"]}
    asked, opener = answering(sample)
    [row] = dcgm_energy(
        "http://p", 0.0, 3600.0, hosts=["node01", "n.2"], gpus=["0", "GPU-b"], job="77", opener=opener
    )
    selector = 'Hostname=~"node01|n\\\\.2", gpu=~"0", UUID=~"GPU-b", hpc_job="77"'
    metric = f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{selector}}}"
    assert asked == [f"sum by (Hostname, gpu, UUID, modelName) (increase({metric}[3600s])) / 1000"]
    assert (row.host, row.device, row.kind, row.source, row.energy_j) == (
        "node01",
        "GPU-a",
        "gpu",
        DCGM_SOURCE,
        3.6e6,
    )
    # a reading is gain x truth with gain in [0.905, 1.064] (SC24): truth in [E / 1.064, E / 0.905],
    # the band wattlog's own counters get (the old E x 0.905 .. E x 1.064 was read the wrong way round)
    assert row.low_j == pytest.approx(3.6e6 / 1.064) and row.high_j == pytest.approx(3.6e6 / 0.905)


def test_the_source_label_is_a_counter_that_names_its_reader() -> None:
    assert energy_label([DCGM_SOURCE]) == "counter (dcgm-exporter)"
    with pytest.raises(ConfigError):
        energy_label(["guessed (dcgm-exporter)"])


def test_slurm_node_lists_expand() -> None:
    assert expand_nodelist("node[01-03,07],gpu5") == ["node01", "node02", "node03", "node07", "gpu5"]
    assert expand_nodelist("x[8-10]-ib") == ["x8-ib", "x9-ib", "x10-ib"]
    for bad in ("node[01-", "node[3-1]", "node[a-b]"):
        with pytest.raises(ConfigError):
            expand_nodelist(bad)


def test_bad_ranges_and_names_are_refused() -> None:
    _, opener = answering()
    with pytest.raises(ConfigError, match="end after"):
        dcgm_energy("http://p", 10.0, 10.0, opener=opener)
    with pytest.raises(ConfigError, match="literally"):
        dcgm_energy("http://p", 0.0, 1.0, hosts=['a"b'], opener=opener)


def test_cli_needs_prometheus_range_and_site() -> None:
    result = CliRunner().invoke(app, ["table", "--dcgm", "--start", "0", "--end", "10"])
    assert result.exit_code != 0 and "--dcgm needs --prometheus URL" in str(result.exception)


def test_a_dcgm_row_of_an_hourly_site_takes_the_tables_hours(tmp_path: Path) -> None:
    t0 = 1_774_742_400  # 2026-03-29T00:00Z
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    save_series(ledger, "ukgrid:GB", HourlySeries({t0: 0.1, t0 + 3600: 0.2}, "recorded"))
    site = Site("gbdc", 1.2, 0.0, 1.29, 0.3, {}, "", IntensityRef("ukgrid", "", "GB"))
    asked: list[tuple[float, str]] = []

    def opener(url: str, timeout: float) -> io.BytesIO:  # 1 MWh per hour, steady
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        window_s = float(query["query"][0].split("[")[1].split("s]")[0])
        asked.append((float(query["time"][0]), query["query"][0]))
        sample = {"metric": {"Hostname": "n1", "gpu": "0"}, "value": [0, str(3.6e9 * window_s / 3600)]}
        body = {"status": "success", "data": {"resultType": "vector", "result": [sample]}}
        return io.BytesIO(json.dumps(body).encode())

    row = dcgm_row("http://p", str(t0 + 1800), str(t0 + 5400), site, ledger=ledger, opener=opener)
    # half an hour in each clock hour: 0.5 MWh x 1.2 x (0.1 + 0.2) = 0.18 t, as the ledger's table
    table = CarbonPath.of(site, ledger=ledger).co2_t(1.0, {t0: 0.5, t0 + 3600: 0.5})
    assert row.co2_t == table and table == pytest.approx(0.18)
    assert [t for t, _ in asked] == [t0 + 5400, t0 + 3600, t0 + 5400]  # the range, then each hour's piece
