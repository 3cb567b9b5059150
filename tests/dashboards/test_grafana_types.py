"""The generated dashboards type-check against Grafana's own published types (`@grafana/schema`, tsc)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from tests.dashboards import grafana_types
from wattlog.dashboards import build

BOARDS = {
    name.removeprefix("grafana/"): json.loads(text)
    for name, text in build.render().items()
    if name.startswith("grafana/")
}


@pytest.fixture(autouse=True)
def _needs_node_packages() -> None:
    why = grafana_types.missing()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{why}: run scripts/setup.sh --servers")
        pytest.skip(f"Grafana's schema types unavailable: {why}")


def test_every_dashboard_satisfies_grafanas_dashboard_and_panel_types(tmp_path: Path) -> None:
    done = grafana_types.check(BOARDS, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda p: p["options"]["legend"].update(displayMode="lst"), '"lst"'),  # a bad enum string
        (lambda p: p["options"].update(legendd={}), "legendd"),  # an unknown key
        (
            lambda p: p["fieldConfig"]["defaults"]["custom"].update(lineWidth="1"),
            "not assignable to type 'number'",
        ),  # a wrong type
        (lambda p: p["options"]["legend"].pop("calcs"), "calcs"),  # a required key missing
    ],
)
def test_the_check_catches_what_grafana_would_not_load(tmp_path: Path, change: object, error: str) -> None:
    board = copy.deepcopy(BOARDS["wattlog-training.json"])
    panel = next(p for p in board["panels"] if p["type"] == "timeseries")
    change(panel)  # type: ignore[operator]
    done = grafana_types.check({"broken.json": board}, tmp_path)
    assert done.returncode != 0 and error in done.stdout, done.stdout
