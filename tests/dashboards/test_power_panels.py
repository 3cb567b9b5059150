"""The Grafana power-fluctuation panels: present, in the right units, and valid PromQL (promtool)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from wattlog.dashboards.energy_board import energy_dashboard


def power_panels() -> list[dict]:
    panels = energy_dashboard()["panels"]
    start = next(i for i, p in enumerate(panels) if p["type"] == "row" and p["title"] == "Power fluctuation")
    return panels[start + 1 :]


def test_the_row_shows_percent_of_limit_swing_and_ramp() -> None:
    titles = {p["title"]: p["fieldConfig"]["defaults"]["unit"] for p in power_panels()}
    # each title names its resolution: the ledger's `table --power` computes the same names per flush interval
    assert titles == {
        "GPU power, % of power limit (per scrape)": "percent",
        "Job power swing (10 min window, 5 s steps)": "watt",
        "Job power ramp rate (1 min fit, per scrape)": "si:W/s",
    }
    assert all("`wattlog table --power`" in p["description"] for p in power_panels())
    pct = power_panels()[0]
    assert [t["legendFormat"] for t in pct["targets"]] == ["min", "median", "max"]
    assert all("wattlog_power_limit_watts" in t["expr"] for t in pct["targets"])


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_every_expression_is_valid_promql(tmp_path: Path) -> None:
    rules = [
        {
            "record": f"wattlog:test_{i}",
            "expr": t["expr"].replace("$run", ".*").replace("$host", ".*").replace("$site", ".*"),
        }
        for i, t in enumerate(t for p in power_panels() for t in p["targets"])
    ]
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps({"groups": [{"name": "power", "rules": rules}]}))  # JSON is YAML
    done = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_the_swing_is_each_runs_not_the_sum_of_every_selected_run(tmp_path: Path) -> None:
    # two steady runs, one ending at 5 min: summed over both, the "job swing" read their total's change
    [swing] = [p for p in power_panels() if p["title"].startswith("Job power swing")][0]["targets"]
    assert swing["legendFormat"] == "{{run}} swing"
    expr = swing["expr"].replace("$run", ".*").replace("$host", ".*").replace("$site", ".*")
    gpu = 'wattlog_power_watts{{kind="gpu", run="{}", host="n", device="gpu0", site="s"}}'
    test = {
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": gpu.format("a"), "values": "1000x5 stale"},
                    {"series": gpu.format("b"), "values": "1268x10"},
                ],
                "promql_expr_test": [
                    {
                        "expr": expr,
                        "eval_time": "8m",
                        "exp_samples": [{"labels": f'{{run="{r}"}}', "value": 0} for r in ("a", "b")],
                    }
                ],
            }
        ],
    }
    (tmp_path / "swing_test.yml").write_text(json.dumps(test))
    done = subprocess.run(
        ["promtool", "test", "rules", "swing_test.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
