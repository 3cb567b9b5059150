"""The webhook receiver over real HTTP on 127.0.0.1, writing to a real (in-memory SQLite) ledger."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.dashboards.webhooks import (
    SIGNATURE_HEADER,
    AlertRecorder,
    Auth,
    PayloadError,
    WebhookReceiver,
    parse,
    sign,
)
from wattlog.errors import ConfigError

TOKEN = "t0ken-for-tests"
SECRET = "s3cret-for-tests"


def am_payload(*alerts: dict[str, Any], status: str = "firing", **extra: Any) -> dict[str, Any]:
    """An Alertmanager webhook payload (version 4) as Alertmanager 0.25 sends it."""
    return {
        "version": "4",
        "groupKey": '{}:{alertname="WattlogPowerAboveLimit"}',
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "wattlog-ledger",
        "groupLabels": {"alertname": "WattlogPowerAboveLimit"},
        "commonLabels": {"alertname": "WattlogPowerAboveLimit"},
        "commonAnnotations": {},
        "externalURL": "http://127.0.0.1:9093",
        "alerts": list(alerts),
        **extra,
    }


def alert(
    run: str = "r1", status: str = "firing", fingerprint: str = "a1b2c3", **labels: str
) -> dict[str, Any]:
    return {
        "status": status,
        "labels": {"alertname": "WattlogPowerAboveLimit", "run": run, "host": "node1", **labels},
        "annotations": {"summary": "gpu1 on node1 draws more than its power limit"},
        "startsAt": "2026-12-02T18:00:00.123456789Z",
        "endsAt": "2026-12-02T18:05:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "generatorURL": "http://127.0.0.1:9090/graph",
        "fingerprint": fingerprint,
    }


@pytest.fixture
def ledger() -> Ledger:
    ledger = Ledger(make_engine("sqlite://"))
    ledger.start_run("r1", RunSpec(site="jupiter"))
    ledger.start_run("r2", RunSpec(site="augusta"))
    return ledger


@pytest.fixture
def receiver(ledger: Ledger) -> Iterator[WebhookReceiver]:
    with WebhookReceiver(
        AlertRecorder(ledger), Auth(token=TOKEN, secret=SECRET), port=0, max_body_bytes=64 * 1024
    ) as server:
        yield server


def post(
    receiver: WebhookReceiver,
    body: bytes | dict,
    headers: dict[str, str] | None = None,
    path: str = "/alerts",
) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    hdrs = (
        {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        if headers is None
        else headers
    )
    request = urllib.request.Request(receiver.url + path, data=data, headers=hdrs, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def alerts_in(ledger: Ledger, run: str = "r1") -> list:
    return [e for e in ledger.events(run) if e.kind == "alert"]


def test_each_alert_becomes_an_event_of_its_run(receiver: WebhookReceiver, ledger: Ledger) -> None:
    status, answer = post(receiver, am_payload(alert("r1"), alert("r2", fingerprint="ffff")))
    assert (status, answer) == (200, {"recorded": 2, "duplicates": 0})
    [event] = alerts_in(ledger, "r1")
    assert event.payload["alertname"] == "WattlogPowerAboveLimit" and event.payload["status"] == "firing"
    assert event.time_s == pytest.approx(1796234400.123456)  # 2026-12-02T18:00:00.123456Z
    assert len(alerts_in(ledger, "r2")) == 1


def test_resends_are_not_recorded_twice_but_the_resolution_is(
    receiver: WebhookReceiver, ledger: Ledger
) -> None:
    post(receiver, am_payload(alert()))
    assert post(receiver, am_payload(alert())) == (200, {"recorded": 0, "duplicates": 1})
    assert post(receiver, am_payload(alert(status="resolved"), status="resolved"))[1]["recorded"] == 1
    assert [e.payload["status"] for e in alerts_in(ledger)] == ["firing", "resolved"]


def test_newer_alertmanager_fields_and_grafana_payloads_are_accepted(
    receiver: WebhookReceiver, ledger: Ledger
) -> None:
    assert post(receiver, am_payload(alert(), notification_reason="new_alerts"))[0] == 200
    grafana = {
        "receiver": "wattlog",
        "status": "firing",
        "orgId": 1,
        "version": "1",
        "state": "alerting",
        "title": "[FIRING:1]",
        "message": "...",
        "groupKey": "{}",
        "truncatedAlerts": 0,
        "alerts": [
            {
                **alert(fingerprint="9f9f"),
                "values": {"A": 812.5},
                "valueString": "[ var='A' ]",
                "silenceURL": "",
                "dashboardURL": "",
                "panelURL": "",
            }
        ],
    }
    assert post(receiver, grafana) == (200, {"recorded": 1, "duplicates": 0})
    assert alerts_in(ledger)[-1].payload["values"] == {"A": 812.5}


def test_hmac_signature_is_accepted_and_checked(receiver: WebhookReceiver, ledger: Ledger) -> None:
    body = json.dumps(am_payload(alert())).encode()
    good = {SIGNATURE_HEADER: sign(SECRET, body), "Content-Type": "application/json"}
    assert post(receiver, body, good)[0] == 200
    tampered = body.replace(b"node1", b"node2")
    assert post(receiver, tampered, good)[0] == 401
    assert len(alerts_in(ledger)) == 1


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {SIGNATURE_HEADER: "sha256=00"}],
)
def test_missing_or_wrong_credentials_get_401(
    receiver: WebhookReceiver, ledger: Ledger, headers: dict[str, str]
) -> None:
    status, answer = post(receiver, am_payload(alert()), headers)
    assert status == 401 and TOKEN not in json.dumps(answer)
    assert alerts_in(ledger) == []


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"\xff\xfe",
        json.dumps([1, 2]).encode(),
        json.dumps({"version": "4", "status": "firing", "alerts": []}).encode(),
        json.dumps(am_payload(alert(), status="exploded")).encode(),
        json.dumps(am_payload({**alert(), "startsAt": "yesterday"})).encode(),
        json.dumps(am_payload({**alert(), "labels": {"run": 1}})).encode(),
        json.dumps(am_payload({**alert(), "status": None})).encode(),
    ],
)
def test_malformed_payloads_get_400_and_nothing_is_recorded(
    receiver: WebhookReceiver, ledger: Ledger, body: bytes
) -> None:
    assert post(receiver, body)[0] == 400
    assert alerts_in(ledger) == []


def test_oversized_body_gets_413_unread(receiver: WebhookReceiver, ledger: Ledger) -> None:
    many = [alert(fingerprint=f"{i:06x}") for i in range(400)]
    assert len(json.dumps(am_payload(*many))) > 64 * 1024
    assert post(receiver, am_payload(*many))[0] == 413
    assert alerts_in(ledger) == []


def test_an_alert_with_no_known_run_and_no_host_gets_422_and_the_batch_is_not_recorded(
    receiver: WebhookReceiver, ledger: Ledger
) -> None:
    lost = alert("nope", fingerprint="0d0d")
    del lost["labels"]["host"]
    status, answer = post(receiver, am_payload(alert("r1"), lost))
    assert status == 422 and "unknown run 'nope'" in answer["error"]
    no_run = alert()
    del no_run["labels"]["run"], no_run["labels"]["host"]
    assert post(receiver, am_payload(no_run))[0] == 422
    assert alerts_in(ledger) == []


def test_run_may_come_from_common_labels(receiver: WebhookReceiver, ledger: Ledger) -> None:
    lone = alert()
    del lone["labels"]["run"]
    payload = am_payload(lone)
    payload["commonLabels"]["run"] = "r2"
    assert post(receiver, payload)[0] == 200
    assert len(alerts_in(ledger, "r2")) == 1


def test_wrong_path_and_missing_credentials_config(receiver: WebhookReceiver) -> None:
    assert post(receiver, am_payload(alert()), path="/nope")[0] == 404
    with pytest.raises(ConfigError, match="WATTLOG_WEBHOOK_TOKEN"):
        Auth.from_env({})
    assert Auth.from_env({"WATTLOG_WEBHOOK_SECRET": "x"}).secret == "x"


def test_parse_gives_a_stable_key_from_fingerprint_start_and_status() -> None:
    [a] = parse(json.dumps(am_payload(alert())).encode())
    [b] = parse(json.dumps(am_payload(alert(), receiver="other")).encode())
    [c] = parse(json.dumps(am_payload(alert(status="resolved"))).encode())
    assert a.key == b.key != c.key
    with pytest.raises(PayloadError) as error:
        parse(b"{}")
    assert error.value.status == 400


class BlockingRecorder:
    """A recorder whose ledger hangs: record() waits until the test releases it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def record(self, alerts: list) -> tuple[int, int]:
        self.entered.set()
        self.release.wait(30)
        return len(alerts), 0


def post_ignoring_errors(receiver: WebhookReceiver, body: dict) -> None:
    """Post from a client thread; its answer (or the reset when the server closes) does not matter."""
    with contextlib.suppress(OSError):
        post(receiver, body)


def test_close_with_a_request_stuck_in_the_ledger_returns_warns_and_names_the_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = BlockingRecorder()
    receiver = WebhookReceiver(recorder, Auth(token=TOKEN), port=0, close_timeout_s=0.3)  # type: ignore[arg-type]
    receiver.start()
    client = threading.Thread(target=post_ignoring_errors, args=(receiver, am_payload(alert())))
    client.start()
    try:
        assert recorder.entered.wait(5)
        closed: list[tuple[str, ...]] = []
        closer = threading.Thread(target=lambda: closed.append(receiver.close()))
        with caplog.at_level(logging.WARNING, logger="wattlog.serving"):
            closer.start()
            closer.join(5)  # before: close() waited for the handler forever
            assert not closer.is_alive()
        [stuck] = closed
        assert len(stuck) == 1 and stuck[0].startswith("wattlog-http")
        assert stuck[0] in caplog.text and "still running" in caplog.text
    finally:
        recorder.release.set()
        client.join(5)


def test_close_reports_nothing_when_every_thread_stopped(receiver: WebhookReceiver) -> None:
    assert post(receiver, am_payload(alert()))[0] == 200
    assert receiver.close() == ()
    assert receiver.close() == ()  # closing twice is harmless


def test_each_accepted_and_rejected_alert_is_one_log_line(
    receiver: WebhookReceiver, ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    """`webhook serve` said nothing about what arrived: now one line per alert, whatever became of it."""
    bad = alert("r2", fingerprint="bad0")
    bad["labels"]["alertname"] = "Bad\x00Name"  # a NUL byte: no ledger can store it
    with caplog.at_level(logging.INFO, logger="wattlog.dashboards.webhooks"):
        post(receiver, am_payload(alert("r1"), bad))
        post(receiver, am_payload(alert("r1")))  # Alertmanager's resend
    lines = [r.getMessage() for r in caplog.records if r.name == "wattlog.dashboards.webhooks"]
    per_alert = [line for line in lines if "fingerprint" in line]
    assert len(per_alert) == 3, lines
    rejected, accepted, resent = per_alert  # the batch's rejections are sorted out first
    assert (
        rejected.startswith("webhook: rejected alert 'Bad\\x00Name' firing (run 'r2'") and "NUL" in rejected
    )
    assert accepted.startswith("webhook: accepted alert 'WattlogPowerAboveLimit' firing (run 'r1'")
    assert accepted.endswith("recorded in r1") and resent.endswith("a resend, already in r1")
    assert all("\n" not in line for line in lines)  # one line each, even for a name with odd bytes


def test_webhook_serve_turns_its_lines_on_with_the_time() -> None:
    from wattlog.dashboards.cli import log_alerts

    logger = log_alerts()
    try:
        assert logger.isEnabledFor(logging.INFO) and not logger.propagate
        [handler] = [h for h in logger.handlers if h.name == "wattlog-webhook-serve"]
        assert log_alerts().handlers.count(handler) == 1  # twice in one process: still one line per alert
        record = logging.LogRecord(logger.name, logging.INFO, "", 0, "webhook: x", None, None)
        assert handler.format(record).endswith("Z INFO webhook: x")
    finally:
        for h in [h for h in logger.handlers if h.name == "wattlog-webhook-serve"]:
            logger.removeHandler(h)
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
