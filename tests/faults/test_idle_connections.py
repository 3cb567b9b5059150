"""Fault: idle TCP connections to the metrics endpoint and the webhook receiver (loopback).

On the old code a connection went to one of 16 workers as soon as it was accepted, and the
worker read it with no timeout: 16 idle connections blocked every scrape and webhook post,
one idle connection kept a worker busy at close (named as stuck after 5 s), and `wattlog
agent` with an idle scraper connection stayed alive past SIGTERM. Here idle connections wait
off the workers, closing drops them at once, and the agent exits.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Gauge

from tests.faults.test_preemption import wait_for_line, wattlog
from tests.waiting import wait_until
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.dashboards.webhooks import AlertRecorder, Auth, WebhookReceiver
from wattlog.serving import WORKERS
from wattlog.telemetry.exporter import MetricsServer, serve

TOKEN = "idle-test-token"


@contextlib.contextmanager
def idle_connections(port: int, n: int) -> Iterator[list[socket.socket]]:
    """`n` connected sockets that never send a byte."""
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(n)]
    try:
        yield sockets
    finally:
        for s in sockets:
            s.close()


@contextlib.contextmanager
def metrics_server() -> Iterator[MetricsServer]:
    registry = CollectorRegistry()
    Gauge("wattlog_idle_test", "A gauge to scrape.", registry=registry).set(1.0)
    server = serve(registry, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.close()


def scrape(port: int, timeout_s: float = 5.0) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)  # old code: no answer
    try:
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        assert b"wattlog_idle_test 1.0" in response.read()
        return response.status
    finally:
        connection.close()


def test_16_idle_connections_do_not_block_a_scrape() -> None:
    with metrics_server() as server, idle_connections(server.port, WORKERS):
        assert [scrape(server.port) for _ in range(3)] == [200, 200, 200]


def test_16_clients_dripping_their_requests_hold_the_workers_for_a_bounded_time() -> None:
    stop = threading.Event()

    def drip(connection: socket.socket) -> None:
        for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000:  # 300 s at this pace
            if stop.wait(0.3):
                return
            try:
                connection.send(bytes([byte]))
            except OSError:
                return  # shut as overdue

    with metrics_server() as server, idle_connections(server.port, WORKERS) as sockets:
        server.server.request_timeout_s = 1.0
        drippers = [threading.Thread(target=drip, args=(s,), daemon=True) for s in sockets]
        for dripper in drippers:
            dripper.start()
        try:
            time.sleep(0.8)  # every worker holds a dripping client (each byte well inside 5 s)
            assert scrape(server.port, timeout_s=20.0) == 200  # old code: none until they finish
        finally:
            stop.set()


def test_16_clients_dripping_a_byte_a_second_delay_a_scrape_by_less_than_1_s() -> None:
    """18aee5b: each dripping client held a worker until its 30 s request deadline (a scrape ~27 s)."""
    stop = threading.Event()
    sent = [0] * WORKERS

    def drip(index: int, connection: socket.socket) -> None:
        for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
            try:
                connection.send(bytes([byte]))
            except OSError:
                return
            sent[index] += 1
            if stop.wait(1.0):
                return

    with metrics_server() as server, idle_connections(server.port, WORKERS) as sockets:
        drippers = [threading.Thread(target=drip, args=(i, s), daemon=True) for i, s in enumerate(sockets)]
        for dripper in drippers:
            dripper.start()
        try:
            wait_until(lambda: min(sent) >= 2, 10.0, lambda: f"bytes sent by each dripper: {sent}")
            started = time.monotonic()
            assert scrape(server.port, timeout_s=20.0) == 200
            took_s = time.monotonic() - started
            assert took_s < 1.0, f"a scrape took {took_s:.1f} s beside 16 dripping clients"
        finally:
            stop.set()
            for dripper in drippers:
                dripper.join(5.0)


def run_and_alert(tmp_path: Path, fingerprint: str) -> tuple[Ledger, bytes]:
    """A ledger with the run "idle", and Alertmanager's POST body of one alert about it."""
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    ledger.start_run("idle")
    alert = {
        "status": "firing",
        "labels": {"alertname": "WattlogPowerAboveLimit", "run": "idle", "host": "node1"},
        "startsAt": "2026-12-02T18:00:00Z",
        "fingerprint": fingerprint,
    }
    return ledger, json.dumps({"version": "4", "status": "firing", "alerts": [alert]}).encode()


def test_a_webhook_post_whose_body_arrives_in_pieces_is_read_whole(tmp_path: Path) -> None:
    """The waiting room hands a POST on only with its body; the handler reads it from the buffer."""
    ledger, body = run_and_alert(tmp_path, "fp-pieces")
    head = (
        f"POST /alerts HTTP/1.0\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with WebhookReceiver(AlertRecorder(ledger), Auth(token=TOKEN), port=0) as receiver:
        port = int(receiver.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
            for piece in (head[:10], head[10:], body[:7], body[7:]):
                connection.sendall(piece)
                time.sleep(0.05)  # separate segments, not a wait before asserting
            answer = connection.makefile("rb").read()
        assert receiver.close() == ()
    assert answer.split(b"\r\n", 1)[0].endswith(b" 200 OK"), answer


def test_closing_with_an_idle_connection_open_leaves_no_thread_stuck() -> None:
    with metrics_server() as server, idle_connections(server.port, 1):
        assert scrape(server.port) == 200  # accepted after the idle one: both are past accept()
        stuck = server.close()
    assert stuck == ()  # old code: a worker still in readline(), named after 5 s


def test_16_idle_connections_do_not_block_a_webhook_post(tmp_path: Path) -> None:
    ledger, body = run_and_alert(tmp_path, "fp-idle")
    with WebhookReceiver(AlertRecorder(ledger), Auth(token=TOKEN), port=0) as receiver:
        port = int(receiver.url.rsplit(":", 1)[1])
        with idle_connections(port, WORKERS):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
            connection.request("POST", "/alerts", body, headers)
            response = connection.getresponse()
            assert response.status == 200, response.read()
            connection.close()
        assert receiver.close() == ()


def test_wattlog_agent_with_an_idle_scraper_connection_exits_on_sigterm(tmp_path: Path) -> None:
    with wattlog(["agent", "--port", "0", "--simulate", "1", "--", "sleep", "60"], tmp_path) as process:
        line = wait_for_line(process, r"metrics at http://")
        port = int(line.split("metrics at http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        with idle_connections(port, WORKERS):
            process.send_signal(signal.SIGTERM)
            out, _ = process.communicate(timeout=30)
        assert process.returncode == 143, out
        assert "stuck" not in out and "still running" not in out, out


def test_wattlog_run_with_idle_scraper_connections_closes_its_run_on_sigterm(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    with wattlog(["run", "--run", "idle", "--db", db, "--", "sleep", "60"], tmp_path) as process:
        url = wait_for_line(process, r"metrics on http://").split("metrics on ")[1].strip()
        port = int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        with idle_connections(port, WORKERS):
            process.send_signal(signal.SIGTERM)
            out, _ = process.communicate(timeout=30)
        assert process.returncode == 143, out
        assert "still running" not in out, out  # no worker left in an idle connection's read
    assert Ledger(make_engine(db)).get_run("idle").status == "preempted"  # old code: running


def test_webhook_server_exits_on_ctrl_c_with_idle_connections_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WATTLOG_WEBHOOK_TOKEN", TOKEN)
    args = ["webhook", "serve", "--port", "0", "--db", f"sqlite:///{tmp_path / 'l.db'}"]
    with wattlog(args, tmp_path) as process:
        line = wait_for_line(process, r"receiving alerts on http://")
        port = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        with idle_connections(port, WORKERS):
            process.send_signal(signal.SIGINT)
            out, _ = process.communicate(timeout=30)
        assert process.returncode in (0, 130), out
        assert "still running" not in out, out
