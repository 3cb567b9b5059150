"""Sending wattlog's events to a webhook: body styles, signature, bounded retries, no secret in logs."""

from __future__ import annotations

import json
import logging
import socket
from types import SimpleNamespace

import pytest
from pytest_httpserver import HTTPServer

from tests.waiting import wait_until
from wattlog.dashboards.notify import Notifier, detection_hook, events_to_send, redact
from wattlog.dashboards.webhooks import SIGNATURE_HEADER, sign
from wattlog.errors import ConfigError, WattlogError

EVENT = {
    "run": "r1",
    "kind": "loss_spike",
    "time_s": 1796234400.0,
    "step": 120,
    "message": "loss 9.1 > 4.2",
    "payload": {"loss": 9.1},
}
SLACK_PATH = "/services/T000/B000/XXXXSECRETXXXX"


def test_json_body_is_signed_and_carries_the_bearer_token(httpserver: HTTPServer) -> None:
    httpserver.expect_oneshot_request("/hook", method="POST").respond_with_data("ok")
    notifier = Notifier(httpserver.url_for("/hook"), token="tok", secret="sec")
    assert notifier.send(EVENT) == 200
    [(request, _)] = httpserver.log
    body = request.get_data()
    assert json.loads(body)["kind"] == "loss_spike" and json.loads(body)["time"].startswith(
        "2026-12-02T18:00"
    )
    assert request.headers["Authorization"] == "Bearer tok"
    assert request.headers[SIGNATURE_HEADER] == sign("sec", body)


def test_slack_style_posts_text(httpserver: HTTPServer) -> None:
    httpserver.expect_oneshot_request(SLACK_PATH, method="POST").respond_with_data("ok")
    Notifier(httpserver.url_for(SLACK_PATH), style="slack").send(EVENT)
    text = json.loads(httpserver.log[0][0].get_data())["text"]
    assert "loss_spike in run r1" in text and "loss 9.1 > 4.2" in text


def test_server_errors_are_retried_with_backoff_then_succeed(httpserver: HTTPServer) -> None:
    for status in (503, 429):
        httpserver.expect_ordered_request("/hook").respond_with_data("busy", status=status)
    httpserver.expect_ordered_request("/hook").respond_with_data("ok")
    sleeps: list[float] = []
    assert Notifier(httpserver.url_for("/hook"), sleep=sleeps.append).send(EVENT) == 200
    assert sleeps == [0.5, 1.0]


def test_retries_are_bounded_and_logs_hide_the_secret_path(
    httpserver: HTTPServer, caplog: pytest.LogCaptureFixture
) -> None:
    httpserver.expect_request(SLACK_PATH).respond_with_data("down", status=500)
    sleeps: list[float] = []
    with caplog.at_level(logging.DEBUG), pytest.raises(WattlogError, match="after 3 tries") as error:
        Notifier(httpserver.url_for(SLACK_PATH), attempts=3, sleep=sleeps.append).send(EVENT)
    assert len(httpserver.log) == 3 and sleeps == [0.5, 1.0]
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("wattlog.dashboards")]
    assert ours and "SECRET" not in str(error.value) and not any("SECRET" in m for m in ours)


def test_client_errors_are_not_retried(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/hook").respond_with_data("no", status=403)
    with pytest.raises(WattlogError, match=r"refused the event \(403\)"):
        Notifier(httpserver.url_for("/hook"), sleep=lambda _s: None).send(EVENT)
    assert len(httpserver.log) == 1


def test_unreachable_target_fails_after_bounded_retries() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    with pytest.raises(WattlogError, match="unreachable after 2 tries") as error:
        Notifier(f"http://127.0.0.1:{port}{SLACK_PATH}", attempts=2, sleep=sleeps.append).send(EVENT)
    assert sleeps == [0.5] and "SECRET" not in str(error.value)


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ConfigError):
        Notifier("ftp://example.org/x")
    with pytest.raises(ConfigError):
        Notifier("http://127.0.0.1/x", attempts=0)
    with pytest.raises(ConfigError):
        Notifier("http://127.0.0.1/x", style="teams")  # type: ignore[arg-type]
    assert redact("https://user:pw@hooks.slack.com/services/T/B/SECRET?x=1") == "https://hooks.slack.com/..."


def test_events_to_send_picks_instabilities_and_failed_health_checks() -> None:
    rows = [
        SimpleNamespace(kind="loss_spike", time_s=1.0, step=3, payload={"message": "spike"}),
        SimpleNamespace(kind="health_check", time_s=2.0, step=None, payload={"ok": True}),
        SimpleNamespace(kind="health_check", time_s=3.0, step=None, payload={"ok": False, "reason": "slow"}),
        SimpleNamespace(kind="restart", time_s=4.0, step=None, payload={}),
    ]
    sent = events_to_send(rows, "r1")
    assert [(e["kind"], e["message"]) for e in sent] == [("loss_spike", "spike"), ("health_check", "slow")]


def test_cli_sends_a_runs_events_from_the_ledger(httpserver: HTTPServer, tmp_path, monkeypatch) -> None:
    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.cli import main

    db = f"sqlite:///{tmp_path / 'w.db'}"
    ledger = Ledger(make_engine(db))
    ledger.start_run("r1")
    ledger.record_event("r1", "loss_spike", step=7, payload={"message": "loss 9 > 4"})
    ledger.record_event("r1", "restart")
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    monkeypatch.setenv("WATTLOG_NOTIFY_SECRET", "sec")
    assert main(["webhook", "send", "--run", "r1", "--url", httpserver.url_for("/hook"), "--db", db]) == 0
    [(request, _)] = httpserver.log
    assert json.loads(request.get_data())["step"] == 7
    assert request.headers[SIGNATURE_HEADER] == sign("sec", request.get_data())
    assert main(["webhook", "send", "--run", "r1", "--db", db]) == 2  # no URL: one line, exit 2


def test_detection_hook_sends_in_the_background(httpserver: HTTPServer) -> None:

    from wattlog.trainer.detectors import Detection

    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    hook = detection_hook(Notifier(httpserver.url_for("/hook")), "r1", clock=lambda: 1796234400.0)
    hook(Detection("loss_scale_collapse", 42, 0.01, 0.03125, "loss scale 0.01 <= 2^-5"))
    wait_until(lambda: httpserver.log, 5, "the hook posted nothing")
    sent = json.loads(httpserver.log[0][0].get_data())
    assert (sent["run"], sent["kind"], sent["step"]) == ("r1", "loss_scale_collapse", 42)
    assert sent["payload"] == {"value": 0.01, "threshold": 0.03125}
