"""The boards' "Agents up" under any scrape job's name, evaluated by the real promtool; boards in UTC."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.dashboards.test_prometheus import tool
from wattlog.dashboards import build
from wattlog.dashboards.queries import AGENT_STATE

ALL = {"$run": ".*", "$host": ".*", "$site": ".*", "$__range": "1h"}


def test_agents_up_reads_live_finished_and_lost_under_a_job_of_any_name(tmp_path: Path) -> None:
    # under job "trainers" (not wattlog|wattlog-nodes) every live agent read red "lost"
    expr = AGENT_STATE
    for variable, value in ALL.items():
        expr = expr.replace(variable, value)
    mark = 'wattlog_agent_finished{{job="trainers", instance="{0}:9464", host="{0}", run="{1}", site="s"}}'
    up = 'up{{job="trainers", instance="{0}:9464"}}'
    series = [
        (up.format("n1"), "1x10"), (mark.format("n1", "live"), "0x10"),
        (up.format("n2"), "1 1 0x8"), (mark.format("n2", "done"), "0 1 stale"),
        (up.format("n3"), "1 1 0x8"), (mark.format("n3", "crashed"), "0 0 stale"),
        ('up{job="node-exporter", instance="n1:9464"}', "0x10"),  # another job, same address: ignored
    ]  # fmt: skip
    states = [("n1", "live", 1), ("n2", "done", 2), ("n3", "crashed", 0)]
    expected = [(f'instance="{h}:9464", host="{h}", run="{r}"', v) for h, r, v in states]
    test = {
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series],
                "promql_expr_test": [
                    {
                        "expr": expr,
                        "eval_time": "8m",
                        "exp_samples": [
                            {"labels": f'{{job="trainers", {labels}}}', "value": v} for labels, v in expected
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "agents_test.yml").write_text(yaml.safe_dump(test))
    done = subprocess.run(
        [tool("promtool"), "test", "rules", "agents_test.yml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_boards_are_in_utc_as_everything_else() -> None:
    # the boards used the browser's time zone where the CLI, report and ledger say UTC
    assert {make()["timezone"] for make in build.BOARDS.values()} == {"utc"}
