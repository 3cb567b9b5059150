"""Event kinds and categories: one vocabulary (wattlog.events) that every writer and reader uses."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from tests.sources import ROOT, product_files
from wattlog.events import INSTABILITIES, EventCategory, EventKind, Progress, Window, json_safe
from wattlog.trainer.callbacks.stability import default_detectors

WORDS = {str(m) for m in EventKind} | {str(m) for m in EventCategory if m.value}


def literal_event_words(path: Path, root: Path = ROOT) -> list[str]:
    """Event kinds or categories spelled as string literals where events are written or compared."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        candidates: list[ast.expr] = []
        if isinstance(node, ast.Compare):
            candidates = [node.left, *node.comparators]
        elif isinstance(node, ast.Call):
            candidates = [k.value for k in node.keywords if k.arg in ("kind", "category")]
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in ("record_event", "event", "Detection", "SpikeDetector"):
                candidates += node.args
        elif isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "kind":
            candidates = [node.value] if node.value is not None else []
        for expr in candidates:
            elements = expr.elts if isinstance(expr, ast.Tuple | ast.List | ast.Set) else [expr]
            for e in elements:
                if isinstance(e, ast.Constant) and e.value in WORDS:
                    found.append(f"{path.relative_to(root)}:{e.lineno}: {e.value!r}")
    return found


def test_no_package_spells_an_event_kind_or_category_as_a_string() -> None:
    assert [hit for f in product_files() for hit in literal_event_words(f)] == []


def test_the_scan_finds_a_literal(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text('if e.kind == "progress":\n    ledger.record_event(run, "alert", category="alert")\n')
    assert len(literal_event_words(sample, tmp_path)) == 3


def test_every_detector_kind_is_an_instability_kind() -> None:
    kinds = {d.kind for detectors in default_detectors().values() for d in detectors}
    assert kinds <= INSTABILITIES
    assert EventKind("loss_spike") is EventKind.LOSS_SPIKE and EventKind.LOSS_SPIKE == "loss_spike"


def test_progress_payload_round_trips_and_reads_old_rows() -> None:
    progress = Progress(attempt=2, attempt_start_s=10.0, tokens_total=640.0, tokens_per_s=32.0)
    assert Progress.from_json(progress.to_json(), time_s=99.0) == progress
    assert "mfu" not in progress.to_json()
    old = Progress.from_json({"tokens_total": 5}, time_s=42.0)
    assert (old.attempt, old.attempt_start_s, old.tokens_total) == (0, 42.0, 5.0)
    assert Window.from_json({"start_s": 1, "end_s": 2}) == Window(1.0, 2.0) and Window.from_json({}) is None


def test_json_safe_keeps_non_finite_numbers_as_text() -> None:
    assert json_safe({"a": math.nan, "b": 1.5, "c": "x"}) == {"a": "nan", "b": 1.5, "c": "x"}
    with pytest.raises(ValueError):
        EventKind("no_such_kind")
