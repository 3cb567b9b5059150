"""A published energy table read from a model card or paper (Markdown pipe table or CSV), cells as printed.

Columns are recognised by their headers (GPU-hours, power W, energy MWh, PUE, carbon
intensity, tonnes CO2e, WUE, water kL; a market-based tonnes column is left out: it is not
the energy's emissions). A row whose first cell starts with "Total" is the table's total.
The Markdown around a table may state totals in words ("a cumulative of 39.3M GPU hours",
"emissions were 11,390 tons"); they are read too. "-" and words are no figure, never 0.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from wattlog.accounting.publishing.disclosure.suite import Printed
from wattlog.errors import ConfigError

COLUMNS = ("hours", "power_w", "energy_mwh", "pue", "intensity", "tonnes", "wue", "water_kl")


def column_kind(header: str) -> str | None:
    """Which figure a header names (None: not one the checks read)."""
    h = re.sub(r"<[^>]+>", "", header).lower()
    if "market" in h:
        return None
    if "hour" in h:
        return "hours"
    if "water usage eff" in h or "wue" in h or "l/kwh" in h:
        return "wue"
    if "water" in h:
        return "water_kl"
    if "mwh" in h:
        return "energy_mwh"
    if "power usage" in h or "pue" in h:
        return "pue"
    if "intensity" in h or "/kwh" in h:
        return "intensity"
    if "(w)" in h:
        return "power_w"
    if any(word in h for word in ("co2", "greenhouse", "ghg", "emission", "emitted")):
        return "tonnes"
    return None


@dataclass(frozen=True, slots=True)
class Cell:
    """A figure as printed: one value, or a range "a - b" (low and high)."""

    low: Printed
    high: Printed

    @classmethod
    def of(cls, text: str) -> Cell | None:
        """The cell's figure, or None for "-", blanks and words."""
        clean = re.sub(r"[*\\]|<[^>]+>", "", text).strip()
        parts = [p.strip() for p in re.split(r"\s+-\s+", clean)]
        try:
            printed = [Printed.of(p) for p in parts]
        except ConfigError:
            return None
        return cls(printed[0], printed[-1]) if len(printed) in (1, 2) else None


@dataclass(frozen=True, slots=True)
class CardRow:
    """One row: its label and its figures by kind (a kind printed in two columns: a list)."""

    label: str
    cells: dict[str, list[Cell | None]]

    @property
    def is_total(self) -> bool:
        """Whether this is the table's total row."""
        return self.label.lower().startswith("total")

    def one(self, kind: str) -> Cell | None:
        """The row's figure of `kind` (its first column of that kind)."""
        found = self.cells.get(kind, [])
        return found[0] if found else None


@dataclass(frozen=True, slots=True)
class CardTable:
    """A card's energy table and the totals its text states."""

    rows: list[CardRow]
    headers: dict[str, list[str]]
    stated: dict[str, Printed] = field(default_factory=dict)

    @property
    def body(self) -> list[CardRow]:
        """The rows that are not the total."""
        return [r for r in self.rows if not r.is_total]

    @property
    def total(self) -> CardRow | None:
        """The total row, if printed."""
        return next((r for r in self.rows if r.is_total), None)


_STATED = {
    "hours": re.compile(
        r"cumulative (?:of )?\**([0-9][0-9.,]*)([kM]?)\**\s*([kM]?)\s*GPU hours", re.IGNORECASE
    ),
    "tonnes": re.compile(
        r"emissions were\s*\**([0-9][0-9.,]*)\**\s*(?:metric )?(?:tons|tCO2)", re.IGNORECASE
    ),
}


def read_card(path: Path) -> CardTable:
    """The first energy table in `path` (Markdown or CSV) and the totals its text states.

    Raises:
        ConfigError: No table with a column the checks read.
    """
    text = path.read_text(encoding="utf-8")
    grid = _csv_grid(text) if path.suffix.lower() == ".csv" else _markdown_grid(text)
    if not grid or not any(column_kind(h) for h in grid[0][1:]):
        raise ConfigError(f"{path}: no energy table found (GPU-hours, MWh, tonnes or water columns)")
    header, *lines = grid
    kinds = [column_kind(h) for h in header]
    headers: dict[str, list[str]] = {}
    for kind, name in zip(kinds, header, strict=True):
        if kind:
            headers.setdefault(kind, []).append(re.sub(r"<[^>]+>", "", name).strip())
    rows = []
    for line in lines:
        cells: dict[str, list[Cell | None]] = {}
        for kind, raw in zip(kinds, line, strict=False):
            if kind:
                cells.setdefault(kind, []).append(Cell.of(raw))
        rows.append(CardRow(line[0].strip(" *"), cells))
    stated = {}
    for kind, pattern in _STATED.items():
        if (match := pattern.search(text)) is not None:
            stated[kind] = Printed.of("".join(match.groups()))
    return CardTable(rows, headers, stated)


def _markdown_grid(text: str) -> list[list[str]]:
    lines = [line.strip() for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return []
    grid = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        inner = (
            line[1:-1] if line.endswith("|") and len(line) > 1 else line[1:]
        )  # "||a|": an empty first cell
        cells = [c.strip() for c in inner.split("|")]
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
            continue  # the separator line
        grid.append(cells)
    return grid


def _csv_grid(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text)) if row and not row[0].startswith("#")]
