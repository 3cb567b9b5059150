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
