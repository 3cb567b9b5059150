"""wattlog/http_exchange.py: one request, its whole answer bounded (the hostile servers are in
tests/faults/test_bounded_clients.py); here what an honest server and a proxy get."""

from __future__ import annotations

import pytest
import requests
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from wattlog.errors import UntrustedInput
from wattlog.http_adapters import bounded_session
from wattlog.http_exchange import Bounds, exchange


def test_an_answer_within_its_bounds_is_read_whole(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/a/b", query_string="x=1&y=2", method="POST", data=b"up").respond_with_data(
        "down", status=201, headers={"X-Kind": "k"}
    )
    answer = exchange("POST", httpserver.url_for("/a/b?x=1&y=2#frag"), body=b"up", bounds=Bounds(5.0, 4))
    assert (answer.status, answer.body, dict(answer.headers)["X-Kind"]) == (201, b"down", "k")


def test_a_body_one_byte_over_the_cap_is_refused(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/").respond_with_data("12345")
    with pytest.raises(UntrustedInput, match="longer than 4 bytes"):
        exchange("GET", httpserver.url_for("/"), bounds=Bounds(5.0, 4))


def test_only_http_urls_are_opened() -> None:
    with pytest.raises(UntrustedInput, match="only http"):
        exchange("GET", "file:///etc/passwd")


def test_a_plain_http_request_goes_through_the_proxy_named(httpserver: HTTPServer) -> None:
    seen: list[str] = []

    def proxy(request: Request) -> Response:
        seen.append(request.environ.get("REQUEST_URI") or request.url)
        return Response("via proxy")

    httpserver.expect_request("/x").respond_with_handler(proxy)
    answer = exchange("GET", "http://bmc.invalid/x?q=1", proxy=httpserver.url_for("/"))
    assert answer.body == b"via proxy" and seen and "bmc.invalid/x?q=1" in seen[0]


def test_a_requests_session_reads_through_the_adapter(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/j").respond_with_json({"a": [1, 2]}, headers={"Set-Cookie": "s=1"})
    with bounded_session(requests.Session(), max_bytes=1024) as session:
        got = session.get(httpserver.url_for("/j"), timeout=5)
        assert got.status_code == 200 and got.json() == {"a": [1, 2]} and got.headers["content-type"]
    httpserver.expect_request("/big").respond_with_data("x" * 2048)
    with bounded_session(requests.Session(), max_bytes=1024) as session, pytest.raises(UntrustedInput):
        session.get(httpserver.url_for("/big"), timeout=5)
