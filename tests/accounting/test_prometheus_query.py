"""The one way the energy readers ask Prometheus: a query, summed by labels, keyed by their values."""

from __future__ import annotations

import io
import json
import urllib.parse
from typing import Any

import pytest

from wattlog.accounting.publishing.prometheus_energy import PrometheusError, PrometheusQuery, window_of
from wattlog.errors import ConfigError


def answering(result: list[dict[str, Any]], result_type: str = "vector") -> tuple[list[tuple[str, str]], Any]:
    asked: list[tuple[str, str]] = []

    def opener(url: str, timeout: float) -> io.BytesIO:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        asked.append((query["query"][0], query["time"][0]))
        body = {"status": "success", "data": {"resultType": result_type, "result": result}}
        return io.BytesIO(json.dumps(body).encode())

    return asked, opener


def test_summed_sends_one_sum_by_and_keys_each_group_by_its_labels() -> None:
    result = [
        {
            "metric": {"host": "n0", "device": "gpu0", "kind": "gpu", "source": "counter"},
            "value": [9, "12.5"],
        },
        {"metric": {"host": "n1", "device": "gpu0", "kind": "gpu"}, "value": [9, "3"]},
    ]
    asked, opener = answering(result)
    got = PrometheusQuery("http://p/", opener=opener).summed("increase(m[60s])", 9.0)
    assert asked == [("sum by (host, device, kind, source) (increase(m[60s]))", "9.000")]
    assert got == {("n0", "gpu0", "gpu", "counter"): 12.5, ("n1", "gpu0", "gpu", ""): 3.0}  # missing: ""


def test_summed_by_other_labels_keys_by_those() -> None:
    asked, opener = answering([{"metric": {"host": "n0", "bound": "low"}, "value": [1, "2"]}])
    assert PrometheusQuery("http://p", opener=opener).summed("x", 1.0, by=("host", "bound")) == {
        ("n0", "low"): 2.0
    }
    assert asked[0][0] == "sum by (host, bound) (x)"


def test_an_answer_of_the_wrong_type_is_an_error_naming_the_server() -> None:
    _, opener = answering([], result_type="matrix")
    with pytest.raises(PrometheusError, match="Prometheus at http://p answered an error"):
        PrometheusQuery("http://p", opener=opener).vector("x", 1.0)


@pytest.mark.parametrize(("start_s", "end_s", "window_s"), [(0.0, 0.2, 1), (0.0, 60.0, 60), (10.0, 70.5, 61)])
def test_a_window_covers_its_range_in_whole_seconds(start_s: float, end_s: float, window_s: int) -> None:
    assert window_of(start_s, end_s, "the range") == window_s


def test_an_empty_window_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="the range must end after it starts"):
        window_of(5.0, 5.0, "the range")
