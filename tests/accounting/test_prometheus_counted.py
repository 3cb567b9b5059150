"""`wattlog table --prometheus` takes what the counters counted, and agrees with the ledger per host.

`increase()` extrapolates each series to the window's edges (-4.5..+2.5 % per
host on a 64-node run); `energy_counted` takes the last value minus the value
at the start, restarts summed from the raw samples. The fake Prometheus here
answers only the queries it understands, from scraped samples, so a table
that still asked for `increase()` fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.prometheus_energy import energy_counted
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Kind, Source

T0 = 1_767_225_600.0
POWER_W = {"n0": 700.0, "n1": 650.0}
SCRAPE_S = 15.0


def scraped(host: str, start_s: float, end_s: float, agent_from_s: float, restart_s: float | None) -> list:
    """Scrapes of one host's GPU counter: counting from `agent_from_s`, from 0 again after a restart."""
    samples, t = [], agent_from_s + 7.0
    while t <= end_s + 2 * SCRAPE_S:
        counting_since = agent_from_s if restart_s is None or t < restart_s else restart_s
        # a job's agent stops counting at the run's end and keeps serving that final value
        value = POWER_W[host] * (min(t, end_s) - counting_since)
        samples.append((t, value))
        t += SCRAPE_S
    return samples


class FakePrometheus:
    """Answers last_over_time, resets and raw range selectors over per-series samples."""

    def __init__(self, series: dict[str, list]) -> None:
        self.series = series  # host -> [(t, value)]
        self.queries: list[str] = []

    def labels(self, host: str) -> dict[str, str]:
        return {"host": host, "device": "GPU-0", "kind": "gpu", "source": "counter", "run": "job"}

    def window(self, host: str, at_s: float, range_s: float) -> list:
        return [(t, v) for t, v in self.series[host] if at_s - range_s < t <= at_s]

    def answer(self, request: Request) -> Response:
        args = parse_qs(request.query_string.decode())
        query, at_s = args["query"][0], float(args["time"][0])
        self.queries.append(query)
        found = re.search(r"(\w+)\(wattlog_energy_joules_total\{[^}]*\}\[(\d+)s\]\)", query)
        raw = re.fullmatch(r"wattlog_energy_joules_total\{[^}]*\}\[(\d+)s\]", query)
        result: list[dict] = []
        if raw:
            for host in self.series:
                values = [[t, str(v)] for t, v in self.window(host, at_s, float(raw.group(1)))]
                result.append({"metric": self.labels(host), "values": values})
            body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
            return Response(json.dumps(body), content_type="application/json")
        if "uncertainty" in query:
            pass
        elif found and found.group(1) in ("last_over_time", "resets"):
            for host in self.series:
                samples = self.window(host, at_s, float(found.group(2)))
                if not samples:
                    continue
                if found.group(1) == "last_over_time":
                    value = samples[-1][1]
                else:
                    value = sum(1 for a, b in zip(samples, samples[1:], strict=False) if b[1] < a[1])
                labels = {k: v for k, v in self.labels(host).items() if k != "run"}
                result.append({"metric": labels, "value": [at_s, str(value)]})
        else:
            return Response(json.dumps({"status": "error", "error": f"not faked: {query}"}), status=400)
        body = {"status": "success", "data": {"resultType": "vector", "result": result}}
        return Response(json.dumps(body), content_type="application/json")


def test_counted_energy_agrees_per_host_with_a_counter_started_before_and_a_restart(
    httpserver: HTTPServer,
) -> None:
    start_s, end_s = T0, T0 + 1800.0
    fake = FakePrometheus(
        {
            # n0's agent ran before the run: its value at the start is taken off
            "n0": scraped("n0", start_s, end_s, agent_from_s=T0 - 600.0, restart_s=None),
            # n1's agent started with the run and restarted half-way: both segments counted
            "n1": scraped("n1", start_s, end_s, agent_from_s=T0, restart_s=T0 + 900.0),
        }
    )
    httpserver.expect_request("/api/v1/query").respond_with_handler(fake.answer)
    rows = energy_counted(httpserver.url_for("/"), start_s, end_s, matchers={"run": "job"}, settle_s=300)
    by_host = {row.host: row.energy_j for row in rows}
    # n0: its value at the start interpolated between two scrapes; n1: from 0, both segments summed
    assert by_host["n0"] == pytest.approx(POWER_W["n0"] * 1800.0, rel=1e-9)
    # what the agent counted after its last scrape before the restart never reached Prometheus
    lost_at_restart_j = POWER_W["n1"] * (900.0 - 892.0)
    assert by_host["n1"] == pytest.approx(POWER_W["n1"] * 1800.0 - lost_at_restart_j, rel=1e-9)
    assert not any(q.startswith("sum by (host, device, kind, source) (increase(") for q in fake.queries)


def test_table_prometheus_row_agrees_with_the_ledger_to_a_tenth_of_a_percent(
    tmp_path: Path, httpserver: HTTPServer
) -> None:
    start_s, end_s = T0, T0 + 3600.0
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'ledger.db'}"), clock=FakeClock(wall_offset_s=T0))
    run = ledger.start_run("solo", RunSpec(model="m", site="jupiter", host="n0"))
    rows = [
        EnergyInterval.of("n0", "GPU-0", Kind.GPU, Source.COUNTER, s, s + 600, 4.2e5, 4e5, 4.4e5, 0, 0)
        for s in range(int(start_s), int(end_s), 600)
    ]
    ledger.record_intervals(run.id, rows)
    ledger.end_run(run.id, end_s=end_s)
    # the host's agent counts on after the run (no settle): its scrapes straddle both edges
    fake = FakePrometheus({"n0": scraped("n0", start_s, end_s + 900, T0 - 3600.0, None)})
    httpserver.expect_request("/api/v1/query").respond_with_handler(fake.answer)
    options = TableOptions(catalog=site_catalog(None), prometheus_url=httpserver.url_for("/"))
    from_ledger = run_row(ledger, ledger.get_run("solo"), TableOptions(catalog=site_catalog(None)))
    from_prometheus = run_row(ledger, ledger.get_run("solo"), options)
    assert from_prometheus.energy_j == pytest.approx(from_ledger.energy_j, rel=1e-3)
    assert any("what each counter counted" in note for note in from_prometheus.notes)
