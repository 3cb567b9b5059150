"""Code a person can hold in mind: product modules under 400 lines, functions under 60.

Complexity (McCabe, 15 at most) is ruff's C901, configured in pyproject.toml. The migrations
are history, written once and never edited, so they are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("telemetry", "accounting", "trainer", "dashboards")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _product_modules() -> list[Path]:
    found = [p for p in (ROOT / "wattlog").rglob("*.py") if not any(layer in p.parts for layer in LAYERS)]
    for layer in LAYERS:
        found += (ROOT / layer).rglob("*.py")
    return sorted(p for p in found if "migrations" not in p.parts)


MODULES = _product_modules()


def test_the_product_modules_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in MODULES}
    assert {"telemetry/sampler.py", "accounting/publishing/footprint.py", "wattlog/records.py"} <= names


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_module_has_one_job_in_under_400_lines(module: Path) -> None:
    lines = len(module.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{lines} lines: split it by job"


def test_no_function_is_over_60_lines() -> None:
    long = []
    for module in MODULES:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1 if node.end_lineno else 0
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{module.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, "\n".join(long)
