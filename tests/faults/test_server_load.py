"""Fault: bursts of concurrent requests to the webhook receiver and the metrics endpoint (loopback, bounded).

On the old code both listened with a backlog of 5: under 200 concurrent
webhook posts 25-69 % were reset or unanswered, and under 500 concurrent
scrapes 127 timed out. Here every request gets an HTTP answer (2xx, 4xx,
429 or 503) and every accepted alert is recorded once.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections import Counter
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Gauge

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.dashboards.webhooks import EVENT_KIND, AlertRecorder, Auth, WebhookReceiver
from wattlog.serving import BACKLOG
from wattlog.telemetry.exporter import serve

TOKEN = "load-test-token"
POSTS = 200
DISTINCT = 150  # the other 50 posts repeat an alert already sent: recorded once


def payload(n: int) -> bytes:
    alert = {
        "status": "firing",
        "labels": {"alertname": "WattlogPowerAboveLimit", "run": "load", "host": "node1"},
        "annotations": {"summary": f"alert {n}"},
        "startsAt": "2026-12-02T18:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "fingerprint": f"fp{n:04d}",
    }
    return json.dumps(
        {"version": "4", "status": "firing", "receiver": "wattlog", "commonLabels": {}, "alerts": [alert]}
    ).encode()


def burst(n: int, one: Callable[[int], int]) -> Counter[str]:
    """Fire `n` requests at once from `n` threads; count HTTP statuses and transport failures."""
    answers: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(n)

    def worker(i: int) -> None:
        start.wait()
        try:
            status = str(one(i))
        except (OSError, http.client.HTTPException) as error:
            status = type(error).__name__
        with lock:
            answers[status] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return answers


def test_200_concurrent_webhook_posts_are_all_answered_and_recorded_once(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    ledger.start_run("load")
    recorded: Counter[str] = Counter()
    with WebhookReceiver(AlertRecorder(ledger), Auth(token=TOKEN), port=0) as receiver:
        host, port = receiver.url.removeprefix("http://").split(":")
        assert receiver._server is not None and receiver._server.request_queue_size >= 128

        def post(i: int) -> int:
            body = payload(i % DISTINCT)
            connection = http.client.HTTPConnection(host, int(port), timeout=60)
            try:
                headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
                connection.request("POST", "/alerts", body, headers)
                response = connection.getresponse()
                answer = json.loads(response.read() or b"{}")
                if response.status == 200:
                    recorded["alerts"] += answer["recorded"]
                return response.status
            finally:
                connection.close()

        answers = burst(POSTS, post)
    events = [e for e in ledger.events("load") if e.kind == EVENT_KIND]
    keys = Counter(e.payload.get("idempotency_key") for e in events)
    print(f"\n{POSTS} concurrent webhook posts: answers {dict(answers)}; {len(events)} alerts recorded")
    assert sum(answers.values()) == POSTS
    assert set(answers) <= {"200", "400", "401", "413", "422", "429", "503"}, answers
    assert all(n == 1 for n in keys.values())  # never twice
    assert len(events) == recorded["alerts"]  # every accepted alert is in the ledger
    if answers["200"] == POSTS:
        assert len(events) == DISTINCT


def test_500_concurrent_scrapes_are_all_answered(tmp_path) -> None:
    registry = CollectorRegistry()
    Gauge("wattlog_load_test", "A gauge to scrape.", registry=registry).set(1.0)
    server = serve(registry, "127.0.0.1", 0)
    try:
        assert server.server.request_queue_size >= BACKLOG

        def scrape(_: int) -> int:
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            try:
                connection.request("GET", "/metrics")
                response = connection.getresponse()
                body = response.read()
                assert response.status != 200 or b"wattlog_load_test 1.0" in body
                return response.status
            finally:
                connection.close()

        answers = burst(500, scrape)
    finally:
        server.close()
    print(f"\n500 concurrent scrapes: answers {dict(answers)}")
    assert sum(answers.values()) == 500 and set(answers) <= {"200", "503"}, answers
