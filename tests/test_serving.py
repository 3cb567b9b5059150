"""Stopping the bounded servers: every thread is verified stopped, or named in a warning and reported."""

from __future__ import annotations

import contextlib
import logging
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from wattlog.serving import BoundedHTTPServer, join_threads

RELEASE = threading.Event()
ENTERED = threading.Event()


class BlockingHandler(BaseHTTPRequestHandler):
    """Answers GET only once the test releases it (a hung dependency)."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        ENTERED.set()
        RELEASE.wait(30)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def get_ignoring_errors(url: str) -> None:
    with contextlib.suppress(OSError):
        urllib.request.urlopen(url, timeout=10).close()


@pytest.fixture
def served() -> Any:
    RELEASE.clear()
    ENTERED.clear()
    server = BoundedHTTPServer(("127.0.0.1", 0), BlockingHandler)
    server.close_timeout_s = 0.3
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="test-serving", daemon=True)
    thread.start()
    yield server, thread
    RELEASE.set()
    server.server_close()


def test_stop_gives_up_on_a_blocked_handler_after_the_timeout_and_names_it(
    served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server, thread = served
    host, port = server.server_address[:2]
    client = threading.Thread(target=get_ignoring_errors, args=(f"http://{host}:{port}/",))
    client.start()
    assert ENTERED.wait(5)
    result: list[tuple[str, ...]] = []
    stopper = threading.Thread(target=lambda: result.append(server.stop(thread)))
    with caplog.at_level(logging.WARNING, logger="wattlog.serving"):
        stopper.start()
        stopper.join(5)  # before: server_close() waited for the handler forever
    assert not stopper.is_alive()
    [stuck] = result
    assert len(stuck) == 1 and stuck[0].startswith("wattlog-http") and stuck == server.stuck
    assert not thread.is_alive()  # the serving loop itself stopped
    assert f"BoundedHTTPServer worker thread(s) {stuck[0]} still running 0.3 s" in caplog.text
    RELEASE.set()
    client.join(5)


def test_stop_reports_nothing_when_every_thread_stopped(served: Any) -> None:
    server, thread = served
    RELEASE.set()
    host, port = server.server_address[:2]
    with urllib.request.urlopen(f"http://{host}:{port}/", timeout=5) as response:
        assert response.status == 204
    assert server.stop(thread) == ()
    assert not thread.is_alive()


def test_stop_of_a_server_never_served_returns_at_once() -> None:
    server = BoundedHTTPServer(("127.0.0.1", 0), BlockingHandler)
    assert server.stop(None) == ()


def test_join_threads_shares_one_deadline_and_skips_threads_never_started(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    stuck = [threading.Thread(target=release.wait, name=f"stuck-{n}", daemon=True) for n in range(3)]
    for thread in stuck:
        thread.start()
    never = threading.Thread(target=release.wait, name="never-started")
    with caplog.at_level(logging.WARNING, logger="wattlog.serving"):
        assert join_threads([*stuck, never], 0.2, "test") == ("stuck-0", "stuck-1", "stuck-2")
    assert "test thread(s) stuck-0, stuck-1, stuck-2 still running" in caplog.text
    release.set()
    assert join_threads(stuck, 5, "test") == ()
