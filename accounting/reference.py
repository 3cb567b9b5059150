"""Published footprints: the five rows of OLMo 2's Table 19, and OPT-175B's reported emissions.

Figures are stored exactly as printed (accounting/data/reference.toml), each
row with its source. :meth:`ReferenceRow.table_row` renders them through the
same formatters as a run's row, and :meth:`ReferenceRow.recomputed` recomputes
emissions and water from the row's own printed inputs with the footprint
functions, so a test can check the catalog figure for figure.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources

from wattlog.accounting.footprint import PUBLISHED, WaterConvention, co2_t, water_kl
from wattlog.accounting.ranges import Quantity, parse_quantity
from wattlog.accounting.render import FIGURE_COLUMNS, TableRow, format_figure
from wattlog.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ReferenceRow:
    """One published footprint.

    Attributes:
        key: Short id, e.g. "olmo-2-7b".
        model: Model name as printed.
        printed: Column -> figure exactly as printed (columns of FIGURE_COLUMNS).
        source: Where the figures come from.
        in_table_19: Whether the row is one of Table 19's five.
        unchecked: Printed figures not checked against Table 19's own print.
        recompute_differs: Column -> why recomputing it from the inputs gives another figure.
    """

    key: str
    model: str
    printed: Mapping[str, str]
    source: str
    in_table_19: bool = True
    unchecked: tuple[str, ...] = ()
    recompute_differs: Mapping[str, str] = field(default_factory=dict)

    def value(self, column: str) -> Quantity | None:
        """A printed figure as a number or range, None where the source gives none."""
        text = self.printed.get(column)
        return None if text is None else parse_quantity(text, f"{self.model}: {column}")

    def recomputed(self) -> dict[str, Quantity]:
        """Emissions and water recomputed from the printed inputs, where they are all given.

        Water uses the paper's convention with the printed WUE as on-site + off-site
        (on-site 0, as the paper assumes), so it is WUE x PUE x energy.
        """
        energy, pue = self.value("total_power_mwh"), self.value("pue")
        intensity, wue = self.value("carbon_intensity_kg_per_kwh"), self.value("wue_l_per_kwh")
        out: dict[str, Quantity] = {}
        if energy is not None and pue is not None and intensity is not None:
            out["co2_t"] = co2_t(energy, pue, intensity)
        if energy is not None and pue is not None and wue is not None:
            out["water_kl"] = water_kl(energy, pue, 0.0, wue, WaterConvention.PAPER)
        return out

    def table_row(self) -> TableRow:
        """The row as a table shows it: the printed figures, labelled "published"."""
        notes = [f"{self.source}"]
        if self.unchecked:
            notes.append(f"not checked against Table 19's print: {', '.join(self.unchecked)}")
        notes.extend(f"{column}: {why}" for column, why in self.recompute_differs.items())
        return TableRow(
            model=self.model,
            total_power_mwh=self.value("total_power_mwh"),
            pue=self.value("pue"),
            carbon_intensity_kg_per_kwh=self.value("carbon_intensity_kg_per_kwh"),
            co2_t=self.value("co2_t"),
            wue_l_per_kwh=self.value("wue_l_per_kwh"),
            water_kl=self.value("water_kl"),
            energy_source=PUBLISHED,
            convention=WaterConvention.PAPER if "water_kl" in self.printed else None,
            notes=tuple(notes),
        )


def reference_rows() -> list[ReferenceRow]:
    """Every published row: Table 19's five, then OPT-175B."""
    text = resources.files("wattlog.accounting").joinpath("data/reference.toml").read_text(encoding="utf-8")
    return [_row(raw) for raw in tomllib.loads(text)["rows"]]


def table19_rows() -> list[ReferenceRow]:
    """The five rows of OLMo 2's Table 19, in the paper's order."""
    return [row for row in reference_rows() if row.in_table_19]


def reference_table_rows(*, table19_only: bool = False) -> list[TableRow]:
    """The catalog as table rows, ready for :func:`wattlog.accounting.render.render`."""
    rows = table19_rows() if table19_only else reference_rows()
    return [row.table_row() for row in rows]


def recomputed_figures(row: ReferenceRow) -> dict[str, str]:
    """:meth:`ReferenceRow.recomputed`, rounded as the paper prints each column."""
    return {column: format_figure(column, value) for column, value in row.recomputed().items()}


def _row(raw: Mapping[str, object]) -> ReferenceRow:
    printed = raw.get("printed", {})
    if not isinstance(printed, dict) or set(printed) - set(FIGURE_COLUMNS):
        raise ConfigError(
            f"reference row {raw.get('key')}: printed columns must be among {sorted(FIGURE_COLUMNS)}"
        )
    differs = raw.get("recompute_differs", {})
    unchecked = raw.get("unchecked", [])
    return ReferenceRow(
        key=str(raw["key"]),
        model=str(raw["model"]),
        printed={str(k): str(v) for k, v in printed.items()},
        source=str(raw["source"]),
        in_table_19=bool(raw.get("in_table_19", True)),
        unchecked=tuple(str(c) for c in unchecked) if isinstance(unchecked, list) else (),
        recompute_differs={str(k): str(v) for k, v in differs.items()} if isinstance(differs, dict) else {},
    )
