"""Fault: one bad alert blocked its whole webhook batch; a non-ASCII auth header crashed the handler.

On the old code (PostgreSQL ledger) an alert whose host label was over 195
characters, or that held a NUL byte, made the batch fail with 503 on every
retry, so the valid alerts in it were never recorded; an Authorization header
with a non-ASCII character raised TypeError in compare_digest: a traceback
and no response. The checks are the ledger's limits, so SQLite (which does
not enforce them) shows the rejection the same way.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest

from tests.dashboards.test_webhooks import TOKEN, alert, alerts_in, am_payload, post
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.dashboards.webhooks import AlertRecorder, Auth, WebhookReceiver


@pytest.fixture
def ledger() -> Ledger:
    ledger = Ledger(make_engine("sqlite://"))
    ledger.start_run("r1")
    return ledger


@pytest.fixture
def receiver(ledger: Ledger) -> Iterator[WebhookReceiver]:
    with WebhookReceiver(AlertRecorder(ledger), Auth(token=TOKEN), port=0) as server:
        yield server


@pytest.mark.parametrize(
    "bad",
    [
        {"run": "gone", "host": "h" * 201},  # over the ledger's host column: no run can be on it
        {"host": "node1", "summary_of": "power\x00limit"},
        {"run": "r" * 201},
    ],
)
def test_one_bad_alert_is_rejected_alone_and_the_rest_recorded(
    receiver: WebhookReceiver, ledger: Ledger, bad: dict[str, str]
) -> None:
    wrong = alert(fingerprint="bad0")
    wrong["labels"].update(bad)
    status, answer = post(receiver, am_payload(alert("r1"), wrong, alert("r1", fingerprint="ok2")))
    assert status == 200 and answer["recorded"] == 2  # old code (PostgreSQL): 503, nothing recorded
    [rejected] = answer["rejected"]
    assert rejected["index"] == 1 and ("NUL" in rejected["reason"] or "characters" in rejected["reason"])
    assert len(alerts_in(ledger, "r1")) == 2


def test_a_non_ascii_auth_header_gets_401(receiver: WebhookReceiver, ledger: Ledger) -> None:
    host, port = receiver.url.removeprefix("http://").split(":")
    body = json.dumps(am_payload(alert("r1"))).encode()
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    connection.putrequest("POST", "/alerts")
    connection.putheader("Authorization", "Bearer t\u00f6ken".encode("latin-1"))  # old code: no response
    connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body)
    response = connection.getresponse()
    assert response.status == 401 and "credentials" in json.loads(response.read())["error"]
    connection.close()
    assert alerts_in(ledger, "r1") == []
