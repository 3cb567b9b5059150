"""Fault: alerts that lied after an agent died, checked on the shipped rules (promtool runs them too).

On the old rules, WattlogAgentDown matched job="wattlog" only while the README's cluster scrape
job is `wattlog-nodes` (four agents killed -9 in a cluster never fired it), then a literal list of
both (silent under any other name); killing an agent
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
STAY_UNTIL_AGENT_DOWN = {"WattlogAgentDown", "WattlogAgentAbsent"}


def alerts() -> dict[str, dict[str, object]]:
    rules = yaml.safe_load((PROMETHEUS / "rules.yml").read_text())
    return {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}


def test_agent_down_and_absent_name_no_scrape_job_so_any_job_name_works() -> None:
    # a literal `job=~"wattlog|wattlog-nodes"` left AgentDown silent under any other job name; the
    # promtool cases (rules_test.yml) run them under a job named "trainers"
    rules = alerts()
    for name in ("WattlogAgentDown", "WattlogAgentAbsent"):
        assert not re.search(r"job\s*(=|=~|!=)", str(rules[name]["expr"])), name


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
