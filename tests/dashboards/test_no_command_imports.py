"""The dashboards read the ledger and Prometheus through accounting's rooms, never a CLI command module."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_dashboard_module_imports_a_command_module() -> None:
    reaching = sorted(
        f"{path.relative_to(ROOT)}: {module}"
        for path in (ROOT / "dashboards").rglob("*.py")
        for module in _imported(path)
        if module.startswith("wattlog.accounting.commands")
    )
    assert reaching == []  # 18aee5b: dashboards/report/data.py imported commands.calibrate_cli


def test_the_stored_calibrations_are_read_from_the_fleet_room(tmp_path, monkeypatch) -> None:
    from wattlog.accounting.fleet.calibration import CALIBRATIONS_ENV, stored_calibrations

    monkeypatch.setenv(CALIBRATIONS_ENV, str(tmp_path / "none.toml"))
    assert stored_calibrations() == {}  # no file: none, never a default multiplier
