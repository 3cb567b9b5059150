"""Alerts without a known run go to their host's runs, never to a run made for them; stale is not resolved."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.dashboards.test_webhooks import SECRET, TOKEN, alert, alerts_in, am_payload, post
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.dashboards.webhooks import AlertRecorder, Auth, WebhookReceiver

T_S = 1796234400.123456  # the fixture alerts' startsAt, 2026-12-02T18:00:00.123456Z


@pytest.fixture
def ledger() -> Ledger:
    ledger = Ledger(make_engine("sqlite://"))
    ledger.start_run("train", RunSpec(site="jupiter", host="vm"), start_s=T_S - 3600)
    ledger.start_run("old", RunSpec(site="jupiter", host="node1"), start_s=T_S - 7200)
    ledger.end_run("old", "finished", end_s=T_S - 3600)
    ledger.start_run("killed", RunSpec(site="jupiter", host="node2"), start_s=T_S - 3600)
    ledger.end_run("killed", "killed", end_s=T_S + 60)  # before the alerts' endsAt (T + 300 s)
    return ledger


@pytest.fixture
def receiver(ledger: Ledger) -> Iterator[WebhookReceiver]:
    with WebhookReceiver(AlertRecorder(ledger), Auth(token=TOKEN, secret=SECRET), port=0) as server:
        yield server


def without_run(host: str, fingerprint: str, **labels: str) -> dict:
    raw = alert(fingerprint=fingerprint, alertname="WattlogAgentDown", **labels)
    del raw["labels"]["run"]
    raw["labels"]["host"] = host
    return raw


def test_an_alert_without_a_run_is_recorded_in_its_hosts_run_and_makes_no_run(
    receiver: WebhookReceiver, ledger: Ledger
) -> None:
    # AgentDown without a run label made a phantom run `host:vm`, status running, in the ledger
    before = {r.name for r in ledger.runs()}
    assert post(receiver, am_payload(without_run("vm", "0a0a")))[0] == 200
    [event] = alerts_in(ledger, "train")
    assert event.payload["labels"]["host"] == "vm" and event.payload["status"] == "firing"
    # a host whose last run ended before the alert: recorded there (as stale: nothing measured then)
    assert post(receiver, am_payload(without_run("node1", "0b0b")))[0] == 200
    [late] = alerts_in(ledger, "old")
    assert late.payload["status"] == "stale" and late.payload["alertmanager_status"] == "firing"
    # an unknown run's alert goes to its host's run, the run it named kept in its labels
    assert post(receiver, am_payload(alert("nope", fingerprint="0c0c", host="vm")))[0] == 200
    assert [e.payload["labels"].get("run") for e in alerts_in(ledger, "train")] == [None, "nope"]
    assert {r.name for r in ledger.runs()} == before  # no run was made


def test_an_alert_whose_host_has_no_run_gets_422_and_makes_no_run(
    receiver: WebhookReceiver, ledger: Ledger
) -> None:
    before = {r.name for r in ledger.runs()}
    status, answer = post(receiver, am_payload(without_run("elsewhere", "0d0d")))
    assert status == 422 and "no run of the ledger on host 'elsewhere'" in answer["error"]
    assert {r.name for r in ledger.runs()} == before


def test_a_condition_that_went_stale_with_its_run_is_recorded_stale_never_resolved(
    receiver: WebhookReceiver, ledger: Ledger
) -> None:
    # RunCO2BudgetSpent "resolved" after a kill while 12x over budget; GpuLost "resolved" though the
    # GPU never came back: their series went stale with the killed agent
    for name in ("WattlogRunCO2BudgetSpent", "WattlogGpuLost"):
        fired = alert("killed", fingerprint=name, alertname=name, host="node2")
        resolved = alert("killed", status="resolved", fingerprint=name, alertname=name, host="node2")
        assert post(receiver, am_payload(fired))[0] == 200
        assert post(receiver, am_payload(resolved, status="resolved"))[0] == 200
    statuses = sorted((e.payload["alertname"], e.payload["status"]) for e in alerts_in(ledger, "killed"))
    assert statuses == [
        ("WattlogGpuLost", "firing"), ("WattlogGpuLost", "stale"),
        ("WattlogRunCO2BudgetSpent", "firing"), ("WattlogRunCO2BudgetSpent", "stale"),
    ]  # fmt: skip
    # a run still measuring: a resolution is one
    resolved = alert("train", status="resolved", host="vm")
    assert post(receiver, am_payload(resolved, status="resolved"))[0] == 200
    assert [e.payload["status"] for e in alerts_in(ledger, "train")] == ["resolved"]
