"""One unit per column: a table's amount columns in the unit its largest value calls for.

A table that printed each cell in the unit of its own size put ``0.109 Wh``
under "Total power (MWh)" beside the paper's ``1,022``. Here every amount
column has one unit, named in its header: with published rows, the paper's
own (MWh, t, kL) for every row; with the user's rows alone, the unit of the
column's largest value (``Total power (Wh)``, ``Water (mL)``). A figure too
small or too large for its column's unit to print in six digits is written
in powers of ten (``1.91x10^-10``), never as ``0.000000000191``.

>>> units = column_units([{"total_power_mwh": 1.1e-7, "co2_t": 1e-8, "water_kl": 7.48e-10}], False)
>>> [units[c].header for c in AMOUNT_COLUMNS]
['Total power (Wh)', 'Emissions (mgCO2eq)', 'Water (uL)']
>>> units["total_power_mwh"].cell(1.1e-7), units["water_kl"].cell(7.48e-10)
('0.110', '0.748')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wattlog.accounting.publishing.grids import MISSING
from wattlog.accounting.ranges import Quantity, bounds
from wattlog.accounting.units import mwh_of, sig3, unit_for

if TYPE_CHECKING:
    from wattlog.accounting.publishing.render import TableRow

__all__ = [
    "AMOUNTS",
    "AMOUNT_COLUMNS",
    "Amount",
    "ColumnUnit",
    "amount_cells",
    "column_units",
    "exact_count",
    "plain_number",
    "unit_headers",
]


@dataclass(frozen=True, slots=True)
class Amount:
    """What an amount column of Table 19 holds.

    Attributes:
        quantity: The quantity ("energy", "mass", "volume"), as units.unit_for names it.
        size: The column's own unit in the quantity's base unit (J, g, L): MWh is 3.6e9 J.
        unit: The column's own unit, the paper's ("MWh", "t", "kL").
        header: The header, with "{unit}" where the unit it prints in goes.
    """

    quantity: str
    size: float
    unit: str
    header: str


AMOUNTS = {
    "total_power_mwh": Amount("energy", 3.6e9, "MWh", "Total power ({unit})"),
    "co2_t": Amount("mass", 1e6, "t", "Emissions ({unit}CO2eq)"),
    "water_kl": Amount("volume", 1e3, "kL", "Water ({unit})"),
}
"""Table 19's amount columns, by name: the one table the renderers and the column units read."""
AMOUNT_COLUMNS = tuple(AMOUNTS)
"""The amount columns of Table 19 (the others, PUE, intensity and WUE, are ratios with fixed units)."""
_SIX_DIGITS = 1e6
_SMALLEST = 1e-3
"""Below this in the column's unit (three leading zeros), a figure is written in powers of ten."""


def plain_number(value: float, whole_from: float = 100) -> str:
    """A figure as a person reads it: whole with separators from 100, 3 significant figures below,
    in powers of ten from a million or under a thousandth. The paper's units print whole from 10
    (`whole_from`), as Table 19 does.

    >>> plain_number(1022.4), plain_number(28.49), plain_number(2.21e12), plain_number(1.91e-10)
    ('1,022', '28.5', '2.21x10^12', '1.91x10^-10')
    """
    size = abs(value)
    if value != 0 and math.isfinite(value) and (size >= _SIX_DIGITS or size < _SMALLEST):
        exponent = math.floor(math.log10(size))
        mantissa = value / 10**exponent
        if abs(round(mantissa, 2)) >= 10:  # 9.996 -> 10.0: one power more
            mantissa, exponent = mantissa / 10, exponent + 1
        return f"{mantissa:.2f}x10^{exponent}"
    return format(value, ",.0f") if size >= whole_from else sig3(value)


def exact_count(value: float | int | None) -> str:
    """A count of tokens exact, with separators: 4,096 stays 4,096; none is "-".

    >>> exact_count(4096), exact_count(2167619048.0), exact_count(None)
    ('4,096', '2,167,619,048', '-')
    """
    return MISSING if value is None else f"{round(value):,}"


@dataclass(frozen=True, slots=True)
class ColumnUnit:
    """The unit one amount column prints in.

    Attributes:
        column: The column (an AMOUNT_COLUMNS name).
        unit: Its unit ("Wh", "g", "mL", or the paper's "MWh", "t", "kL").
        factor: What a figure in the column's value unit (MWh, t, kL) is multiplied by to be in `unit`.
    """

    column: str
    unit: str
    factor: float

    @property
    def papers(self) -> bool:
        """Whether this is the paper's unit (its figures print whole from 10, as Table 19's)."""
        return self.unit == AMOUNTS[self.column].unit

    @property
    def header(self) -> str:
        """The column's header, naming its unit: "Total power (Wh)", "Emissions (tCO2eq)"."""
        return AMOUNTS[self.column].header.format(unit=self.unit)

    def cell(self, value: Quantity | None) -> str:
        """`value` (in the column's value unit: MWh, t or kL) in this unit; a range "lo - hi"; none "-"."""
        if value is None:
            return MISSING
        whole_from = 10 if self.papers else 100
        lo, hi = (plain_number(x * self.factor, whole_from) for x in bounds(value))
        return lo if lo == hi else f"{lo} - {hi}"


def column_units(rows: Iterable[Mapping[str, Quantity | None]], published: bool) -> dict[str, ColumnUnit]:
    """Each amount column's unit: the paper's when `published` rows are shown, else the largest value's.

    Args:
        rows: Each row's figures in the columns' value units (MWh, t, kL), by column name; an energy
            column may also list the band and the GPU and CPU+DRAM parts under "total_power_mwh" extras.
        published: Whether published rows (printed in the paper's units) are in the table.
    """
    largest = dict.fromkeys(AMOUNT_COLUMNS, 0.0)
    for row in rows:
        for column, value in row.items():
            if column in largest and value is not None:
                largest[column] = max(largest[column], *(abs(x) for x in bounds(value)))
    units = {}
    for column, amount in AMOUNTS.items():
        if published or largest[column] == 0:
            unit, size = amount.unit, amount.size
        else:
            unit, size = unit_for(largest[column] * amount.size, amount.quantity)
        units[column] = ColumnUnit(column, unit, amount.size / size)
    return units


def unit_headers(units: Mapping[str, ColumnUnit]) -> dict[str, str]:
    """The headers of the amount columns and of the energy's band and parts, in the units chosen."""
    energy = units["total_power_mwh"].unit
    return {
        **{column: unit.header for column, unit in units.items()},
        "energy_band_mwh": f"Energy band ({energy})",
        "gpu_mwh": f"GPU energy ({energy})",
        "host_mwh": f"CPU+DRAM energy ({energy})",
    }


def amount_cells(rows: Sequence[TableRow]) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The headers of the amount columns in their units, and each row's amount cells (a published
    row's as printed), its energy band and GPU and CPU+DRAM parts included."""
    parts = [mwh_of(p) for r in rows for p in (r.energy_band_j, r.gpu_j, r.host_j)]
    figures = [{c: r.figure(c) for c in AMOUNT_COLUMNS} for r in rows]
    units = column_units(
        [*figures, *({"total_power_mwh": p} for p in parts)], any(r.role == "published" for r in rows)
    )
    energy = units["total_power_mwh"]
    cells = []
    for r, figure in zip(rows, figures, strict=True):
        row = {c: r.printed[c] if c in r.printed else units[c].cell(figure[c]) for c in AMOUNT_COLUMNS}
        row["energy_band_mwh"] = energy.cell(mwh_of(r.energy_band_j))
        row["gpu_mwh"], row["host_mwh"] = energy.cell(mwh_of(r.gpu_j)), energy.cell(mwh_of(r.host_j))
        cells.append(row)
    return unit_headers(units), cells
