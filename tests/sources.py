"""The product's Python files, each once, for tests that scan source text (event kinds, metric names)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("telemetry", "accounting", "trainer", "dashboards")


def product_files(root: Path = ROOT) -> Iterator[Path]:
    """wattlog/'s own modules, then the four layer folders' (wattlog/telemetry etc. are links to them)."""
    for path in sorted((root / "wattlog").rglob("*.py")):
        if path.relative_to(root / "wattlog").parts[0] not in LAYERS:
            yield path
    for layer in LAYERS:
        yield from sorted((root / layer).rglob("*.py"))
