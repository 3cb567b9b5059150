"""energy_from_prometheus against a loopback HTTP server that answers like Prometheus's API."""

from __future__ import annotations

import json
import socket
from urllib.parse import parse_qs

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from wattlog.accounting.publishing.prometheus_energy import PrometheusError, energy_from_prometheus
from wattlog.errors import ConfigError

LABELS = {"host": "n0", "device": "GPU-1", "kind": "gpu", "source": "counter"}


def vector(*samples: tuple[dict, float]) -> dict:
    return {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": m, "value": [0, str(v)]} for m, v in samples]},
    }


def test_increase_over_the_run_with_band_ratio(httpserver: HTTPServer) -> None:
    queries: list[str] = []

    def answer(request: Request) -> Response:
        query = parse_qs(request.query_string.decode())["query"][0]
        queries.append(query)
        if query.startswith("sum by (host, device, kind, source) (increase("):
            body = vector((LABELS, 3600.0))
        elif "uncertainty" in query:
            body = vector(({**LABELS, "bound": "low"}, 9500.0), ({**LABELS, "bound": "high"}, 10500.0))
        else:
            body = vector((LABELS, 10000.0))
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request("/api/v1/query").respond_with_handler(answer)
    [row] = energy_from_prometheus(httpserver.url_for("/"), 1000.0, 1100.5, matchers={"host": "n0"})
    assert (row.device, row.kind, row.source, row.energy_j) == ("GPU-1", "gpu", "counter", 3600.0)
    assert (row.low_j, row.high_j) == pytest.approx((3420.0, 3780.0))
    assert 'increase(wattlog_energy_joules_total{host="n0"}[101s])' in queries[0]


def test_error_answer_is_one_line(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/v1/query").respond_with_json(
        {"status": "error", "errorType": "bad_data", "error": "parse error"}, status=400
    )
    with pytest.raises(PrometheusError, match="refused the query \\(400\\): parse error"):
        energy_from_prometheus(httpserver.url_for("/"), 0.0, 10.0)


def test_unreachable_prometheus_names_the_flag() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(
        PrometheusError, match=f"cannot reach Prometheus at http://127.0.0.1:{port}.*--prometheus"
    ):
        energy_from_prometheus(f"http://127.0.0.1:{port}", 0.0, 10.0, timeout_s=2)


def test_empty_window_is_refused() -> None:
    with pytest.raises(ConfigError, match="must end after it starts"):
        energy_from_prometheus("http://127.0.0.1:1", 10.0, 10.0)
