"""The shipped Alertmanager config on a real Alertmanager: a finished run's alerts and a lost device's
power alerts are inhibited (held back, marked suppressed), everything else goes through."""

from __future__ import annotations

import json
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.integration.conftest import Servers
from tests.integration.servers import http_json
from tests.waiting import wait_until
from wattlog.dashboards import build

pytestmark = pytest.mark.integration

SHIPPED = Path(build.__file__).parent / "prometheus" / "alertmanager.yml"


def post_alerts(url: str, alerts: list[dict[str, str]]) -> None:
    now = datetime.now(UTC).isoformat()
    body = json.dumps([{"labels": labels, "startsAt": now} for labels in alerts]).encode()
    request = urllib.request.Request(
        f"{url}/api/v2/alerts", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    urllib.request.urlopen(request, timeout=5).close()


def test_a_finished_runs_alerts_and_a_lost_devices_power_alerts_are_inhibited(servers: Servers) -> None:
    alertmanager = servers.alertmanager(SHIPPED.read_text())
    gpu = {"host": "n1", "device": "gpu1", "run": "live"}
    post_alerts(
        alertmanager.url,
        [
            {"alertname": "WattlogRunFinished", "run": "done", "severity": "info"},
            {"alertname": "WattlogSamplerOverruns", "run": "done", "host": "n0", "severity": "warning"},
            {"alertname": "WattlogRunCO2BudgetSpent", "run": "done", "site": "s", "severity": "critical"},
            {"alertname": "WattlogGpuLost", **gpu, "severity": "critical"},
            {"alertname": "WattlogPowerAboveLimit", **gpu, "kind": "gpu", "severity": "warning"},
            {"alertname": "WattlogSamplerOverruns", "run": "live", "host": "n1", "severity": "warning"},
        ],
    )

    def states() -> dict[tuple[str, str], str]:
        found = http_json(f"{alertmanager.url}/api/v2/alerts")
        return {(a["labels"]["alertname"], a["labels"]["run"]): a["status"]["state"] for a in found}

    wanted = {
        ("WattlogRunFinished", "done"): "active",
        ("WattlogSamplerOverruns", "done"): "suppressed",  # after a normal end: no page
        ("WattlogRunCO2BudgetSpent", "done"): "suppressed",
        ("WattlogGpuLost", "live"): "active",
        ("WattlogPowerAboveLimit", "live"): "suppressed",  # a lost device's last reading is no reading
        ("WattlogSamplerOverruns", "live"): "active",  # a live run's own alert goes through
    }
    wait_until(lambda: states() == wanted, 10, lambda: f"states {states()} != {wanted}", poll_s=0.2)
