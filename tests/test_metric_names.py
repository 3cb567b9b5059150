"""Metric names are defined once (wattlog.metric_names) and everything else reads them back by name."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from tests.sources import ROOT, product_files
from wattlog.metric_names import USER_PROVIDED, MetricName

NAMES_MODULE = ROOT / "wattlog" / "metric_names.py"
NAME = re.compile(r"\bwattlog_[a-z0-9_]+")
NOT_METRICS = {
    "wattlog_clock": "an attribute of the pynvml-compatible shim (telemetry/sensors/fake_pynvml.py)",
    "wattlog_webhook_token": "the Docker secret's file name (compose.yml, alertmanager.yml)",
    "wattlog_simulated": "the amdsmi and pyhlml stand-ins' marker (fake_amdsmi.py, fake_pyhlml.py)",
    "wattlog_cause": "the log record attribute naming an outage's cause (wattlog/causes.py)",
    "wattlog_identity": "a savepoint's name (accounting/ledger/identity.py)",
    "wattlog_moving": "the temporary table rows leave DEFAULT through (accounting/ledger/partitions.py)",
}
SHIPPED = ("dashboards/prometheus/*.yml", "dashboards/grafana/*.json", "dashboards/grafana/provisioning/**/*")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (they may show `# HELP wattlog_...` lines)."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    out.add(id(stmt.value))
    return out


def literal_names(source: str) -> list[str]:
    """`wattlog_` names spelled in the code's string literals (f-string parts included), not in docstrings."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found += [name for name in NAME.findall(node.value) if name not in NOT_METRICS]
    return found


def test_literal_names_sees_plain_and_f_string_literals_but_not_docstrings() -> None:
    source = (
        '"""# HELP wattlog_power_watts doc."""\nA = "wattlog_gaps_total"\nB = f"rate(wattlog_x{{{A}}}[1m])"\n'
    )
    assert literal_names(source) == ["wattlog_gaps_total", "wattlog_x"]


def test_no_product_module_spells_a_metric_name_outside_the_names_module() -> None:
    spelled = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in product_files()
        if path != NAMES_MODULE
        for name in literal_names(path.read_text(encoding="utf-8"))
    }
    assert not spelled, "use wattlog.metric_names.MetricName instead of these literals"


def test_shipped_rules_and_dashboards_name_only_defined_metrics() -> None:
    defined = {str(name) for name in MetricName}
    files = [path for pattern in SHIPPED for path in sorted(ROOT.glob(pattern)) if path.is_file()]
    assert any(path.suffix == ".json" for path in files) and any(path.suffix == ".yml" for path in files)
    named = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in files
        for name in NAME.findall(path.read_text(encoding="utf-8"))
        if name not in NOT_METRICS and name not in defined
    }
    assert not named


def test_user_provided_names_are_read_by_the_rules() -> None:
    rules = (ROOT / "dashboards/prometheus/rules.yml").read_text(encoding="utf-8")
    assert all(re.search(rf"\b{name}\b", rules) for name in USER_PROVIDED)


class _Both(Collector):
    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        counter = CounterMetricFamily(MetricName.GAPS_TOTAL, "Gaps.", labels=["host"])
        counter.add_metric(["h"], 2.0)
        gauge = GaugeMetricFamily(MetricName.POWER_WATTS, "Power.", labels=["host"])
        gauge.add_metric(["h"], 300.0)
        yield counter
        yield gauge


def test_members_given_to_metric_families_expose_exactly_their_names() -> None:
    """A counter's member ends in _total; prometheus_client strips it and adds it back on exposition."""
    registry = CollectorRegistry()
    registry.register(_Both())
    text = generate_latest(registry).decode()
    assert 'wattlog_gaps_total{host="h"} 2.0' in text
    assert "# TYPE wattlog_gaps_total counter" in text
    assert 'wattlog_power_watts{host="h"} 300.0' in text
    assert "MetricName" not in text
