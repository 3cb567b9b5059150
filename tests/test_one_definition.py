"""One definition each (issue 39): a constant the product needs in many places is defined once."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("wattlog", "telemetry", "accounting", "trainer", "dashboards")


def _module_constants(value: float) -> list[str]:
    """Every module-level name bound to `value` (as a literal or a product of literals) in the product."""
    found = []
    for folder in PRODUCT:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if (ROOT / folder).is_symlink() or "migrations" in path.parts:
                continue  # wattlog/<wing> links to the wing itself; a migration is frozen history
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
                bound = getattr(node, "value", None)
                if isinstance(target, ast.Name) and bound is not None and _evaluates_to(bound, value):
                    found.append(f"{path.relative_to(ROOT)}:{target.id}")
    return found


def _evaluates_to(node: ast.expr, value: float) -> bool:
    try:
        result = eval(compile(ast.Expression(node), "<constant>", "eval"), {"__builtins__": {}})  # noqa: S307
    except Exception:  # a name, a call: not a literal constant
        return False
    return isinstance(result, (int, float)) and not isinstance(result, bool) and result == value


def test_the_hour_is_defined_once() -> None:
    assert _module_constants(3600) == ["accounting/units.py:HOUR_S"]


def test_the_columns_a_gap_and_a_band_revision_share_are_defined_once() -> None:
    tree = ast.parse((ROOT / "accounting/ledger/models.py").read_text(encoding="utf-8"))
    owners = [
        cls.name
        for cls in tree.body
        if isinstance(cls, ast.ClassDef)
        for node in cls.body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "reason"
    ]
    assert owners == ["Stretch"]  # 18aee5b: BandRevisionRecord and GapRecord, column by column


def _sizes_amounts(bound: ast.expr | None) -> bool:
    """Whether `bound` is a dict giving Table 19's amount columns their size (MWh = 3.6e9 J)."""
    if not isinstance(bound, ast.Dict):
        return False
    entries = {
        k.value: v for k, v in zip(bound.keys, bound.values, strict=True) if isinstance(k, ast.Constant)
    }
    energy = entries.get("total_power_mwh")
    sized = energy is not None and any(getattr(n, "value", None) == 3.6e9 for n in ast.walk(energy))
    return sized and {"co2_t", "water_kl"} <= entries.keys()


def test_table_19s_amount_columns_are_described_in_one_table() -> None:
    tables = []
    for folder in PRODUCT:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if (ROOT / folder).is_symlink():
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
                if isinstance(target, ast.Name) and _sizes_amounts(getattr(node, "value", None)):
                    tables.append(f"{path.relative_to(ROOT)}:{target.id}")
    # 18aee5b: column_units' _QUANTITY and _PAPER_UNIT, and render's _READABLE (quantity, size, unit) besides
    assert tables == ["accounting/publishing/column_units.py:AMOUNTS"]
