"""Fault: the report listed an alert that fired and then resolved as the same event twice.

Alertmanager posts an alert once firing and once resolved; both are stored. On the old code the
report's events table had no status column, so the pair read as one alert shown twice.
"""

from __future__ import annotations

import json
from pathlib import Path

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.dashboards.report.data import load_report
from wattlog.dashboards.webhooks import AlertRecorder, parse


def body(status: str) -> bytes:
    alert = {
        "status": status,
        "labels": {"alertname": "WattlogGpuLost", "run": "a", "host": "node1", "device": "gpu0"},
        "annotations": {"summary": "GPU gpu0 on node1 was lost"},
        "startsAt": "2026-12-02T18:00:00Z",
        "endsAt": "2026-12-02T18:05:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "fingerprint": "fp-gpu0",
    }
    return json.dumps({"version": "4", "status": status, "alerts": [alert]}).encode()


def test_the_reports_events_say_which_alert_fired_and_which_resolved(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    ledger.start_run("a", RunSpec(site="jupiter"))
    recorder = AlertRecorder(ledger)
    for status in ("firing", "resolved"):
        recorder.record(parse(body(status)))
    events = load_report(ledger, "a").events
    alerts = events[events["kind"] == "alert"]
    assert list(alerts["status"]) == ["firing", "resolved"]  # old code: no status column
    assert set(events.loc[events["kind"] != "alert", "status"]) <= {""}
