"""Alert rules, Alertmanager config and deployment files, checked with the real promtool and amtool."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from wattlog.dashboards import build
from wattlog.dashboards.panels import DATASOURCE_UID

DASHBOARDS = Path(build.__file__).parent
PROMETHEUS = DASHBOARDS / "prometheus"


def tool(name: str) -> str:
    """Path of a Debian prometheus tool; skipped locally when missing, a failure in CI."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing: apt-get install prometheus prometheus-alertmanager")
        pytest.skip(f"{name} not installed (apt-get install prometheus prometheus-alertmanager)")
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=PROMETHEUS, capture_output=True, text=True, timeout=60, check=False)


def test_rule_unit_tests_pass_with_promtool() -> None:
    done = run(tool("promtool"), "test", "rules", "rules_test.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_promtool_test_rules_can_fail(tmp_path: Path) -> None:
    for name in ("rules.yml", "sites.rules.yml"):
        shutil.copy(PROMETHEUS / name, tmp_path / name)
    wrong = (PROMETHEUS / "rules_test.yml").read_text().replace("value: 3.984", "value: 4.5")
    (tmp_path / "rules_test.yml").write_text(wrong)
    done = subprocess.run(
        [tool("promtool"), "test", "rules", "rules_test.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and "FAILED" in done.stdout + done.stderr


def test_every_alert_has_a_rule_test_and_the_alerts_the_issue_asks_for() -> None:
    rules = yaml.safe_load((PROMETHEUS / "rules.yml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    assert alerts == {
        "WattlogAgentDown",
        "WattlogAgentAbsent",
        "WattlogSamplerOverruns",
        "WattlogGpuIdleWhileTraining",
        "WattlogPowerAboveLimit",
        "WattlogLossSpikes",
        "WattlogLossScaleCollapse",
        "WattlogRunCO2OverBudget",
        "WattlogSamplerStalled",
        "WattlogGpuLost",
        "WattlogGapsRising",
        "WattlogEnergyCounterStalled",
        "WattlogNonFiniteLoss",
        "WattlogTrainingStalled",
        "WattlogRunCO2BudgetSpent",
        "WattlogRunFinished",  # the source of alertmanager.yml's inhibitions
    }
    tests = yaml.safe_load((PROMETHEUS / "rules_test.yml").read_text())
    fired = {
        case["alertname"]
        for t in tests["tests"]
        for case in t.get("alert_rule_test", [])
        if case["exp_alerts"]
    }
    assert fired == alerts
    quiet = {
        case["alertname"]
        for t in tests["tests"]
        for case in t.get("alert_rule_test", [])
        if not case["exp_alerts"]
    }
    assert quiet >= alerts, alerts - quiet


def test_scrape_config_keeps_the_run_the_agent_exports() -> None:
    # Runs are told apart by the agent's own `run` label, never by a target's port (which a later run
    # may reuse); honor_labels keeps the agent's run and host over the target's.
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "wattlog")
    assert job["honor_labels"] is True
    for static in job["static_configs"]:
        assert "run" not in static.get("labels", {}) and "host" in static["labels"]


def test_prometheus_config_and_rules_check() -> None:
    done = run(tool("promtool"), "check", "config", "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_alertmanager_config_checks_and_sends_to_the_webhook() -> None:
    done = run(tool("amtool"), "check-config", "alertmanager.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    config = yaml.safe_load((PROMETHEUS / "alertmanager.yml").read_text())
    hooks = [h for r in config["receivers"] for h in r.get("webhook_configs", [])]
    assert hooks and hooks[0]["url"].endswith("/alerts") and hooks[0]["send_resolved"]
    assert "credentials" not in hooks[0]["http_config"]["authorization"]  # the token stays in a file
    inhibited = {r["source_matchers"][0]: r["equal"] for r in config["inhibit_rules"]}
    assert inhibited == {  # the behaviour: tests/integration/test_alert_inhibition.py
        'alertname="WattlogRunFinished"': ["run"],
        'alertname="WattlogGpuLost"': ["host", "device", "run"],
    }


def test_grafana_provisioning_and_compose_agree_with_the_dashboards() -> None:
    sources = yaml.safe_load((DASHBOARDS / "grafana/provisioning/datasources/wattlog.yaml").read_text())
    assert sources["datasources"][0]["uid"] == DATASOURCE_UID
    assert sources["datasources"][0]["type"] == "prometheus"
    providers = yaml.safe_load((DASHBOARDS / "grafana/provisioning/dashboards/wattlog.yaml").read_text())
    path = providers["providers"][0]["options"]["path"]
    compose = yaml.safe_load((DASHBOARDS / "compose.yml").read_text())
    assert set(compose["services"]) >= {"prometheus", "alertmanager", "grafana", "trainer", "webhook"}
    mounts = compose["services"]["grafana"]["volumes"]
    assert f"./grafana:{path}:ro" in mounts
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            local = volume.split(":")[0]
            if local.startswith("."):
                assert (DASHBOARDS / local).exists(), volume
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), "published ports stay on loopback"
