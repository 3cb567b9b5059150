"""The server helpers themselves: Alertmanager and Prometheus wired together, rules loaded, clean stop."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import Servers
from tests.integration.servers import ServerFailed, http_json
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

RULES = """
groups:
  - name: helper-test
    rules:
      - alert: AlwaysFiring
        expr: vector(1)
"""


def test_prometheus_loads_rules_and_finds_its_alertmanager(servers: Servers, tmp_path: Path) -> None:
    alertmanager = servers.alertmanager({"route": {"receiver": "null"}, "receivers": [{"name": "null"}]})
    http_json(f"{alertmanager.url}/api/v2/alerts", "POST", [{"labels": {"alertname": "Posted"}}])
    assert [a["labels"]["alertname"] for a in http_json(f"{alertmanager.url}/api/v2/alerts")] == ["Posted"]

    rules = tmp_path / "rules.yml"
    rules.write_text(RULES)
    prometheus = servers.prometheus(rule_files=[rules], alertmanager_url=alertmanager.url)
    groups = http_json(f"{prometheus.url}/api/v1/rules")["data"]["groups"]
    assert [r["name"] for g in groups for r in g["rules"]] == ["AlwaysFiring"]
    prometheus.wait_for('ALERTS{alertname="AlwaysFiring"}', timeout_s=15)

    def received() -> bool:
        return "AlwaysFiring" in {
            a["labels"]["alertname"] for a in http_json(f"{alertmanager.url}/api/v2/alerts")
        }

    # Prometheus discovers its Alertmanager within ~5 s, then sends
    wait_until(received, 20, "the alert never reached Alertmanager", 0.25)

    prometheus.stop()
    assert prometheus.process.returncode is not None
    with pytest.raises(OSError):
        prometheus.query("up")


def test_wait_for_names_the_query_when_it_gives_up(servers: Servers) -> None:
    prometheus = servers.prometheus()
    with pytest.raises(ServerFailed, match="no_such_metric"):
        prometheus.wait_for("no_such_metric", timeout_s=1, poll_s=0.2)
