"""`wattlog card check`: a published energy table checked against itself, every figure within its rounding.

Four checks, each comparing intervals (a printed figure is anything its rounding allows;
PUE is a stated factor, taken as exact):

- totals vs rows: each column's total against the sum of its rows, and the totals the text
  states ("a cumulative of 39.3M GPU hours") against the table's;
- tonnes vs energy x intensity: tCO2e = MWh x PUE x kg/kWh where a row prints all three;
- water vs energy x WUE: kL = MWh x PUE x L/kWh, each end of a range;
- hours vs tonnes: GPU-hours in the total that no row carries, while its tonnes are only
  the rows' (hours that carry no emissions), or the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wattlog.accounting.publishing.disclosure.card_table import COLUMNS, CardRow, CardTable, Cell, read_card
from wattlog.accounting.publishing.disclosure.suite import Printed

Interval = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Finding:
    """One fault: which check, where, and what disagrees with what."""

    check: str
    where: str
    message: str


def _sum(values: Sequence[Printed]) -> Interval:
    return sum(v.bounds[0] for v in values), sum(v.bounds[1] for v in values)


def _overlap(a: Interval, b: Interval) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1e6 else f"{value:,.6g}"


def _text(interval: Interval) -> str:
    low, high = interval
    return _num(low) if abs(high - low) <= 1e-9 * max(1.0, abs(high)) else f"{_num(low)} - {_num(high)}"


def _hours_of(row: CardRow) -> list[Printed]:
    return [c.low for c in row.cells.get("hours", []) if c is not None]


def totals_vs_rows(table: CardTable) -> list[Finding]:
    """Each column's total against its rows; the text's stated totals against the table."""
    found = []
    total = table.total
    for kind in COLUMNS:
        for index, name in enumerate(table.headers.get(kind, [])):
            cell = total.cells[kind][index] if total is not None and index < len(total.cells[kind]) else None
            parts = [c.low for r in table.body if (c := r.cells[kind][index]) is not None]
            if cell is None or not parts:
                continue  # no total, or a column only the total fills (hours vs tonnes judges that)
            if not _overlap(cell.low.bounds, _sum(parts)):
                message = f"total {cell.low.text} but its {len(parts)} rows sum to {_text(_sum(parts))}"
                found.append(Finding("totals vs rows", f"{name}", message))
    for kind, stated in table.stated.items():
        table_total = _table_total(table, kind)
        if table_total is not None and not _overlap(stated.bounds, table_total):
            what = "GPU-hours" if kind == "hours" else "tCO2e"
            message = f"the text states {stated.text} {what}, the table's {what} come to {_text(table_total)}"
            found.append(Finding("totals vs rows", "text above the table", message))
    return found


def _table_total(table: CardTable, kind: str) -> Interval | None:
    """The table's total of `kind`: its total row (every column of that kind), else its rows' sum."""
    total = table.total
    if total is not None:
        cells = [c.low for c in total.cells.get(kind, []) if c is not None]
        if cells:
            return _sum(cells)
    parts = [c.low for r in table.body for c in r.cells.get(kind, []) if c is not None]
    return _sum(parts) if parts else None


def _product(*cells: Printed, exact: Sequence[Printed] = ()) -> Interval:
    low = high = 1.0
    for cell in cells:
        low, high = low * cell.bounds[0], high * cell.bounds[1]
    for factor in exact:
        low, high = low * factor.value, high * factor.value
    return low, high


def energy_products(table: CardTable) -> list[Finding]:
    """tCO2e against MWh x PUE x intensity, and kL against MWh x PUE x WUE (each end of a range)."""
    found = []
    for row in table.body:
        energy, pue = row.one("energy_mwh"), row.one("pue")
        if energy is None or pue is None:
            continue
        pairs = (
            ("intensity", "tonnes", "tonnes vs energy x intensity"),
            ("wue", "water_kl", "water vs energy x WUE"),
        )
        for factor_kind, result_kind, check in pairs:
            factor, result = row.one(factor_kind), row.one(result_kind)
            if factor is None or result is None:
                continue
            for end, f, r in (("low", factor.low, result.low), ("high", factor.high, result.high)):
                expected = _product(energy.low, f, exact=[pue.low])
                if not _overlap(expected, r.bounds):
                    label = "" if factor.low is factor.high else f" ({end} end)"
                    message = (
                        f"{energy.low.text} MWh x PUE {pue.low.text} x {f.text} = {_text(expected)}, "
                        f"printed {r.text}{label}"
                    )
                    found.append(Finding(check, row.label, message))
                if factor.low is factor.high:
                    break
    return found


def hours_vs_tonnes(table: CardTable) -> list[Finding]:
    """GPU-hours the total counts beyond its rows while its tonnes are only the rows' (or the reverse)."""
    total = table.total
    if total is None:
        return []
    total_hours = _hours_of(total)
    tonnes = total.one("tonnes")
    row_tonnes = [c.low for r in table.body if (c := r.one("tonnes")) is not None]
    if not total_hours or tonnes is None or not row_tonnes:
        return []
    extra_hours = _minus(_sum(total_hours), _sum([h for r in table.body for h in _hours_of(r)]))
    extra_tonnes = _minus(tonnes.low.bounds, _sum(row_tonnes))
    hours_name = ", ".join(table.headers.get("hours", []))
    if extra_hours[0] > 0 and extra_tonnes[0] <= 0 <= extra_tonnes[1]:
        message = (
            f"the total counts {_text(extra_hours)} GPU-hours ({hours_name}) beyond its rows, but its "
            f"{tonnes.low.text} t are only the rows' ({_text(_sum(row_tonnes))}): "
            "those hours carry no emissions"
        )
        return [Finding("hours vs tonnes", total.label, message)]
    if extra_tonnes[0] > 0 and extra_hours[0] <= 0 <= extra_hours[1]:
        message = f"the total counts {_text(extra_tonnes)} t beyond its rows with no GPU-hours beyond theirs"
        return [Finding("hours vs tonnes", total.label, message)]
    return []


def _minus(a: Interval, b: Interval) -> Interval:
    return a[0] - b[1], a[1] - b[0]


def check_table(table: CardTable) -> list[Finding]:
    """Every fault the four checks find (empty: consistent)."""
    return [*totals_vs_rows(table), *energy_products(table), *hours_vs_tonnes(table)]


def check_card(path: Path) -> list[Finding]:
    """Read `path` (Markdown or CSV) and check its energy table.

    Raises:
        ConfigError: No energy table in it.
    """
    return check_table(read_card(path))


__all__ = ["Cell", "Finding", "check_card", "check_table"]
