"""Published footprints: the five rows of OLMo 2's Table 19, cell for cell, and OPT-175B's emissions.

Every cell is stored exactly as printed (accounting/data/reference.toml) and
shown as printed, so `wattlog table --reference` reproduces Table 19 cell for
cell; where a printed figure disagrees with the paper's own formula the row
carries a note saying so (the figure is never corrected). Each row says
whether its energy is IT (GPU) energy, with PUE applied on top as Table 19
does, or facility energy with PUE already included. :meth:`ReferenceRow.recomputed`
recomputes emissions and water from the row's printed inputs with the
footprint functions, so a test checks the catalog against the paper's formula.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources

from wattlog.accounting.it_energy import PUBLISHED
from wattlog.accounting.publishing.footprint import WaterConvention, co2_t, water_kl
from wattlog.accounting.publishing.render import FIGURE_COLUMNS, RANGE_SEP, TableRow, format_figure
from wattlog.accounting.ranges import Quantity, parse_quantity
from wattlog.accounting.units import mwh_to_j
from wattlog.errors import ConfigError

ENERGY_BASES = {
    "it": "energy is GPU (IT) energy as printed; PUE is applied on top",
    "facility": "energy already includes PUE (facility energy); PUE is not applied again",
}
"""What a published row's energy covers."""


@dataclass(frozen=True, slots=True)
class ReferenceRow:
    """One published footprint.

    Attributes:
        key: Short id, e.g. "olmo-2-7b".
        model: Model name as printed.
        printed: Column -> cell exactly as printed (columns of FIGURE_COLUMNS); absent = "-".
        source: Where the figures come from.
        in_table_19: Whether the row is one of Table 19's five.
        energy_basis: "it" or "facility" (see ENERGY_BASES).
        notes: Where a printed figure disagrees with the formula, and other caveats.
        recompute_differs: Column -> why recomputing it from the inputs gives another figure.
    """

    key: str
    model: str
    printed: Mapping[str, str]
    source: str
    in_table_19: bool = True
    energy_basis: str = "it"
    notes: tuple[str, ...] = ()
    recompute_differs: Mapping[str, str] = field(default_factory=dict)

    def value(self, column: str) -> Quantity | None:
        """A printed figure as a number or range ("1,450 - 4,823"), None where the source prints "-"."""
        text = self.printed.get(column)
        if text is None:
            return None
        return parse_quantity(text.replace(",", "").replace(RANGE_SEP, "-"), f"{self.model}: {column}")

    def recomputed(self) -> dict[str, Quantity]:
        """Emissions and water recomputed from the printed inputs, where they are all given.

        Water uses the paper's convention with the printed WUE as on-site + off-site
        (on-site 0, as the paper assumes), so it is WUE x PUE x energy. A row whose
        energy already includes PUE is recomputed with PUE 1.
        """
        energy, pue = self.value("total_power_mwh"), self.value("pue")
        intensity, wue = self.value("carbon_intensity_kg_per_kwh"), self.value("wue_l_per_kwh")
        if self.energy_basis == "facility":
            pue = 1.0
        out: dict[str, Quantity] = {}
        if energy is not None and pue is not None and intensity is not None:
            out["co2_t"] = co2_t(energy, pue, intensity)
        if energy is not None and pue is not None and wue is not None:
            out["water_kl"] = water_kl(energy, pue, 0.0, wue, WaterConvention.PAPER)
        return out

    def table_row(self) -> TableRow:
        """The row as a table shows it: every cell as printed, labelled "published" (energy read in J)."""
        energy_mwh = self.value("total_power_mwh")
        return TableRow(
            model=self.model,
            energy_j=None if energy_mwh is None else energy_mwh * mwh_to_j(1.0),
            pue=self.value("pue"),
            carbon_intensity_kg_per_kwh=self.value("carbon_intensity_kg_per_kwh"),
            co2_t=self.value("co2_t"),
            wue_l_per_kwh=self.value("wue_l_per_kwh"),
            water_kl=self.value("water_kl"),
            energy_source=PUBLISHED,
            convention=WaterConvention.PAPER if "water_kl" in self.printed else None,
            notes=(self.source, ENERGY_BASES[self.energy_basis], *self.notes),
            printed=dict(self.printed),
            sources={column: self.source for column in self.printed},
            energy_basis=self.energy_basis,
            role="published",
        )


def reference_rows() -> list[ReferenceRow]:
    """Every published row: Table 19's five, then OPT-175B."""
    text = resources.files("wattlog.accounting").joinpath("data/reference.toml").read_text(encoding="utf-8")
    return [_row(raw) for raw in tomllib.loads(text)["rows"]]


def table19_rows() -> list[ReferenceRow]:
    """The five rows of OLMo 2's Table 19, in the paper's order."""
    return [row for row in reference_rows() if row.in_table_19]


def reference_table_rows(*, table19_only: bool = False) -> list[TableRow]:
    """The catalog as table rows, ready for :func:`wattlog.accounting.publishing.render.render`."""
    rows = table19_rows() if table19_only else reference_rows()
    return [row.table_row() for row in rows]


def recomputed_figures(row: ReferenceRow) -> dict[str, str]:
    """:meth:`ReferenceRow.recomputed`, rounded as the paper prints each column."""
    return {column: format_figure(column, value) for column, value in row.recomputed().items()}


def _strings(raw: object, what: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ConfigError(f"reference row {what}: expected a list of strings")
    return tuple(raw)


def _row(raw: Mapping[str, object]) -> ReferenceRow:
    key = str(raw.get("key"))
    printed = raw.get("printed", {})
    if not isinstance(printed, dict) or set(printed) - set(FIGURE_COLUMNS):
        raise ConfigError(f"reference row {key}: printed columns must be among {sorted(FIGURE_COLUMNS)}")
    basis = str(raw.get("energy_basis", ""))
    if basis not in ENERGY_BASES:
        raise ConfigError(f"reference row {key}: energy_basis must be one of {sorted(ENERGY_BASES)}")
    differs = raw.get("recompute_differs", {})
    if not isinstance(differs, dict):
        raise ConfigError(f"reference row {key}: recompute_differs must be a table")
    return ReferenceRow(
        key=key,
        model=str(raw["model"]),
        printed={str(k): str(v) for k, v in printed.items()},
        source=str(raw["source"]),
        in_table_19=bool(raw.get("in_table_19", True)),
        energy_basis=basis,
        notes=_strings(raw.get("notes", []), f"{key}: notes"),
        recompute_differs={str(k): str(v) for k, v in differs.items()},
    )
