"""Fault: alerts that lied after an agent died, checked on the shipped rules (promtool runs them too).

On the old rules, WattlogAgentDown matched job="wattlog" only while the README's cluster scrape
job is `wattlog-nodes` (four agents killed -9 in a cluster never fired it); killing an agent
"resolved" its GpuLost and PowerAboveLimit alerts within seconds (its series went stale); and a
29 g run's budget alert read "already emitted 0.0 tCO2eq". The firing and resolving are proven
by dashboards/prometheus/rules_test.yml (tests/dashboards/test_prometheus.py runs promtool).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from wattlog.dashboards import build

PROMETHEUS = Path(build.__file__).parent / "prometheus"
README = Path(__file__).parents[2] / "README.md"
STAY_UNTIL_AGENT_DOWN = {"WattlogAgentDown", "WattlogAgentAbsent"}


def alerts() -> dict[str, dict[str, object]]:
    rules = yaml.safe_load((PROMETHEUS / "rules.yml").read_text())
    return {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}


def documented_jobs() -> set[str]:
    shipped = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    jobs = {c["job_name"] for c in shipped["scrape_configs"]}
    return jobs | set(re.findall(r"job_name:\s*([\w-]+)", README.read_text()))


def test_agent_down_and_absent_cover_every_documented_scrape_job() -> None:
    jobs = documented_jobs()
    assert {"wattlog", "wattlog-nodes"} <= jobs
    rules = alerts()
    for name in ("WattlogAgentDown", "WattlogAgentAbsent"):
        expr = str(rules[name]["expr"])
        for job in jobs:
            assert re.search(rf'job(=|=~)"[^"]*\b{re.escape(job)}\b', expr), f"{name} misses job {job}"


def test_alerts_on_an_agents_series_outlast_the_agent_until_agent_down_fires() -> None:
    down_for_s = 120  # WattlogAgentDown's `for`
    for name, rule in alerts().items():
        if name in STAY_UNTIL_AGENT_DOWN:
            continue
        keep = str(rule.get("keep_firing_for", "0m"))
        assert keep.endswith("m") and int(keep[:-1]) * 60 > down_for_s, f"{name} resolves by staleness"


def test_budget_alerts_print_readable_units_not_rounded_tonnes() -> None:
    for name in ("WattlogRunCO2BudgetSpent", "WattlogRunCO2OverBudget"):
        summary = str(alerts()[name]["annotations"]["summary"])  # type: ignore[index]
        assert "%.1f" not in summary and "humanize" in summary, summary
