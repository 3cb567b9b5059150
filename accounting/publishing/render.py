"""Table-19-style tables in five formats: rich, Markdown, LaTeX, CSV and HTML.

A table is a list of :class:`TableRow` (a run's, from :meth:`TableRow.from_footprint`,
or a published one from :mod:`wattlog.accounting.publishing.reference`). Columns follow the OLMo 2
paper's Table 19 (model, total power MWh, PUE, carbon intensity, emissions
tCO2eq, WUE, water kL), then the energy's source label and uncertainty band,
then GPU and CPU+DRAM energy apart when a row measured both. Figures are
rounded as the paper prints them; a range prints "105 - 347". Every table ends
with footnotes saying what it leaves out and which water convention it used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from rich.console import Console, RenderableType

from wattlog.accounting.it_energy import Energy
from wattlog.accounting.publishing.column_units import AMOUNT_COLUMNS, AMOUNTS, amount_cells
from wattlog.accounting.publishing.efficiency import Efficiency
from wattlog.accounting.publishing.fitted import FittedTable
from wattlog.accounting.publishing.footprint import Footprint, WaterConvention
from wattlog.accounting.publishing.grids import MISSING as MISSING
from wattlog.accounting.publishing.grids import TableFormat as TableFormat
from wattlog.accounting.publishing.grids import html_grid, latex_grid, markdown_grid, printable, rich_grid
from wattlog.accounting.publishing.grids import render_grid as render_grid
from wattlog.accounting.ranges import Quantity, Range, bounds
from wattlog.accounting.units import mwh_of, readable_range, sig3
from wattlog.errors import ConfigError

RANGE_SEP = " - "
"""Between the ends of a range, as the paper prints them ("1.29 - 4.26")."""

LEFT_OUT = (
    "Left out: embodied emissions and water of the hardware (`wattlog table --project P` shows them "
    "apart, never folded into this table), and inference. As in the OLMo 2 paper, these figures are "
    "lower bounds."
)
ENERGY_NOTE = (
    "Total power is IT energy, labelled by source (counter, sampled, estimated, simulated, or published "
    "by the row's source); facility energy = IT energy x PUE. Ranges are min - max."
)
SPLIT_NOTE = (
    "GPU and CPU+DRAM energy are shown apart where both were measured: GPUs alone miss part of a node's draw."
)


FIGURE_COLUMNS = (
    "total_power_mwh",
    "pue",
    "carbon_intensity_kg_per_kwh",
    "co2_t",
    "wue_l_per_kwh",
    "water_kl",
)
"""The figure columns of Table 19, in its order."""


def format_figure(column: str, value: Quantity | None) -> str:
    """One cell, rounded as the OLMo 2 paper prints that column; a range as "lo - hi", nothing as "-".

    Energy, tonnes and kilolitres print whole from 10 up, with thousands
    separators ("1,022"), and to 3 significant figures below, positional, never in
    scientific notation ("0.000000138"); PUE with up to 2 decimals (1.2, 1.12);
    intensity with 3 (0.332); WUE with 2 (3.10).

    >>> format_figure("water_kl", Range(1450.2, 4823.0))
    '1,450 - 4,823'
    >>> format_figure("total_power_mwh", 1.38e-07)
    '0.000000138'
    >>> format_figure("wue_l_per_kwh", 3.1)
    '3.10'
    >>> format_figure("pue", 1.2)
    '1.2'
    """
    if value is None:
        return MISSING
    lo, hi = bounds(value)
    if column in AMOUNT_COLUMNS:
        big = abs(hi) >= 10  # both ends of a range rounded alike
        texts = [format(x, ",.0f") if big else sig3(x) for x in (lo, hi)]
    elif column == "pue":
        texts = [format(x, ".2f").rstrip("0").rstrip(".") for x in (lo, hi)]
    elif column == "carbon_intensity_kg_per_kwh":
        texts = [format(lo, ".3f"), format(hi, ".3f")]
    elif column == "wue_l_per_kwh":
        texts = [format(lo, ".2f"), format(hi, ".2f")]
    else:
        raise ValueError(f"not a figure column: {column}")
    return texts[0] if texts[0] == texts[1] else f"{texts[0]}{RANGE_SEP}{texts[1]}"


def readable_figure(column: str, value: Quantity | None) -> str:
    """An amount cell in the unit of its size ("28.5 Wh", "11.4 g"); in the column's own unit, as the paper.

    A figure as large as the column's unit (MWh, t, kL) prints bare as `format_figure` does,
    so the header's unit holds; a smaller one names its unit. Nothing is "-".

    >>> readable_figure("total_power_mwh", 2.85e-05), readable_figure("co2_t", Range(1e-05, 1.2e-05))
    ('28.5 Wh', '10.0 - 12.0 g')
    >>> readable_figure("water_kl", 202.0), readable_figure("water_kl", None)
    ('202', '-')
    """
    text = readable_amount(column, value)
    return format_figure(column, value) if text.endswith(f" {AMOUNTS[column].unit}") else text


def readable_amount(column: str, value: Quantity | None) -> str:
    """An amount in the unit of its size, always naming it ("28.5 Wh", "131 MWh"); nothing is "-".

    >>> readable_amount("total_power_mwh", 131.0), readable_amount("water_kl", Range(0.001, 0.0012))
    ('131 MWh', '1.00 - 1.20 L')
    """
    if value is None:
        return MISSING
    amount = AMOUNTS[column]
    lo, hi = bounds(value)
    return readable_range(lo * amount.size, hi * amount.size, amount.quantity).replace(" - ", RANGE_SEP)


@dataclass(frozen=True, slots=True)
class TableRow:
    """One row of a Table-19-style table. None means the source gives no figure.

    Attributes:
        model: Model or run name.
        energy_j: IT energy, J (the "Total power (MWh)" column prints it in MWh).
        pue: Power usage effectiveness.
        carbon_intensity_kg_per_kwh: kg CO2e per kWh (the mean, if hourly).
        co2_t: Emissions, tonnes CO2e.
        wue_l_per_kwh: WUE on-site + off-site, L/kWh.
        water_kl: Water consumed, kL.
        energy_source: counter|sampled|estimated|simulated|published, or a "+" mix.
        energy_band_j: Uncertainty band of energy_j, J, if measured.
        hourly_intensity: Whether emissions were summed hour by hour.
        gpu_j: GPU energy, J, where measured apart.
        host_j: CPU+DRAM energy, J, where measured apart.
        convention: Water convention behind water_kl.
        notes: Footnotes about this row.
        printed: Column -> text exactly as a publication prints it; shown instead of the
            formatted figure (a published row is reproduced cell for cell).
        extra: (header, text) cells of extra columns; another module adds a column this way
            (a row without it shows "-").
        sources: Column -> where that figure comes from (JSON export; energy defaults to energy_source).
        energy_basis: What the energy figure covers: "it" (IT/GPU energy, PUE not applied) or
            "facility" (PUE included); "" if unknown.
        role: What the row is: "published", "run", "subtotal" or "total" (exports use it).
        validity: The validity gate's reasons against the run (empty: valid; None: not gated).
        efficiency: J per token, J per 10^18 FLOP and mean GPU power / TDP of a recorded run (a
            line in the notes and fields in the exports, not a column: the paper has none).
    """

    model: str
    energy_j: Quantity | None
    pue: Quantity | None
    carbon_intensity_kg_per_kwh: Quantity | None
    co2_t: Quantity | None
    wue_l_per_kwh: Quantity | None
    water_kl: Quantity | None
    energy_source: str
    energy_band_j: Range | None = None
    hourly_intensity: bool = False
    gpu_j: float | None = None
    host_j: float | None = None
    convention: WaterConvention | None = None
    notes: tuple[str, ...] = ()
    printed: Mapping[str, str] = field(default_factory=dict)
    extra: tuple[tuple[str, str], ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    energy_basis: str = "it"
    role: str = "run"
    validity: tuple[str, ...] | None = None
    efficiency: Efficiency | None = None

    def with_notes(self, *notes: str) -> TableRow:
        """A copy with `notes` added."""
        return replace(self, notes=(*self.notes, *notes))

    def with_extra(self, header: str, text: str) -> TableRow:
        """A copy with one more extra-column cell."""
        return replace(self, extra=(*self.extra, (header, text)))

    def figure(self, column: str) -> Quantity | None:
        """The value of a figure column (FIGURE_COLUMNS) in the column's unit, None where not given."""
        if column == "total_power_mwh":
            return mwh_of(self.energy_j)
        return cast("Quantity | None", getattr(self, column))

    def cell(self, column: str) -> str:
        """A figure column's text: the printed text if the row has one, else the formatted value."""
        if column in self.printed:
            return self.printed[column]
        return self.amount(column, self.figure(column))

    def amount(self, column: str, value: Quantity | None) -> str:
        """`value` of `column`'s quantity as this row prints it: a user's row in readable units."""
        if self.role != "published" and column in AMOUNTS:
            return readable_figure(column, value)
        return format_figure(column, value)

    @classmethod
    def from_footprint(cls, model: str, footprint: Footprint, notes: Sequence[str] = ()) -> TableRow:
        """The row of a run's footprint; its notes carry the footprint's caveats."""
        return cls(
            model=model,
            energy_j=footprint.it_energy_j,
            pue=footprint.pue,
            carbon_intensity_kg_per_kwh=footprint.intensity_kg_per_kwh,
            co2_t=footprint.co2_t,
            wue_l_per_kwh=footprint.wue_l_per_kwh,
            water_kl=footprint.water_kl,
            energy_source=footprint.energy_source,
            energy_band_j=footprint.energy_band_j,
            hourly_intensity=footprint.hourly,
            gpu_j=footprint.gpu_j,
            host_j=footprint.host_j,
            convention=footprint.convention,
            notes=(*footprint.notes, *notes),
            sources={
                "total_power_mwh": footprint.energy_source,
                "pue": f"site {footprint.site} (wattlog sites)",
                "carbon_intensity_kg_per_kwh": footprint.intensity_label,
                "co2_t": "energy x PUE x carbon intensity",
                "wue_l_per_kwh": f"site {footprint.site} (wattlog sites)",
                "water_kl": footprint.convention.description,
            },
        )

    @classmethod
    def from_energy(cls, model: str, energy: Energy, notes: Sequence[str] = ()) -> TableRow:
        """The row of a run with energy and no site: its energy, source and band; no PUE, CO2 or water."""
        no_site = (None, None, None, None, None)  # PUE, intensity, CO2, WUE, water
        return cls(
            model, energy.it_j, *no_site, energy.source, energy.band_j,
            gpu_j=energy.gpu_j, host_j=energy.host_split_j, notes=tuple(notes),
            sources={"total_power_mwh": energy.source},
        )  # fmt: skip


HEADERS = {
    "model": "Model",
    "total_power_mwh": "Total power (MWh)",
    "pue": "PUE",
    "carbon_intensity_kg_per_kwh": "Carbon intensity (kg CO2e/kWh)",
    "co2_t": "Emissions (tCO2eq)",
    "wue_l_per_kwh": "WUE (L/kWh)",
    "water_kl": "Water (kL)",
    "energy_source": "Energy source",
    "energy_band_mwh": "Energy band (MWh)",
    "gpu_mwh": "GPU energy (MWh)",
    "host_mwh": "CPU+DRAM energy (MWh)",
}


def table_cells(rows: Sequence[TableRow]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells; GPU and CPU+DRAM columns only if a row has both; extra columns last.

    Each amount column prints in one unit, named in its header (see `publishing.column_units`).
    """
    split = any(r.gpu_j is not None and r.host_j is not None for r in rows)
    keys = [k for k in HEADERS if split or k not in ("gpu_mwh", "host_mwh")]
    extra = list(dict.fromkeys(header for r in rows for header, _ in r.extra))
    unit_headers, amounts = amount_cells(rows)
    cells = []
    for r, amount in zip(rows, amounts, strict=True):
        by_key = {column: r.cell(column) for column in FIGURE_COLUMNS} | amount
        if r.hourly_intensity:
            by_key["carbon_intensity_kg_per_kwh"] += " (hourly mean)"
        by_key.update(
            model=printable(r.model) + (" (NOT VALID)" if r.validity else ""),  # newlines must not break it
            energy_source=r.energy_source,
        )
        texts = dict(r.extra)
        cells.append([by_key[k] for k in keys] + [texts.get(h, MISSING) for h in extra])
    headers = HEADERS | unit_headers
    return [headers[k] for k in keys] + extra, cells


def readable_summary(row: TableRow) -> str:
    """One line: the row's energy, emissions and water in readable units (J/Wh/kWh/MWh, g/kg/t, L/kL)."""
    parts = []
    for column, what, unit in (
        ("total_power_mwh", "IT energy", ""),
        ("co2_t", "emissions", " CO2e"),
        ("water_kl", "water", ""),
    ):
        value = row.figure(column)
        if value is not None:
            parts.append(f"{what} {readable_amount(column, value)}{unit}")
    return f"{row.model}: " + ", ".join(parts) + f" (energy source: {row.energy_source})"


def footnotes(rows: Sequence[TableRow]) -> list[str]:
    """What every table says below it: what is left out, units, water convention(s), row notes."""
    notes = [LEFT_OUT, ENERGY_NOTE]
    for convention in WaterConvention:
        if any(r.convention is convention for r in rows):
            notes.append(f"Water (kL) = {convention.description}.")
    if any(r.gpu_j is not None and r.host_j is not None for r in rows):
        notes.append(SPLIT_NOTE)
    notes.extend(f"{r.model}: {note}" for r in rows for note in dict.fromkeys(r.notes))
    # A run's figures also in units of their size: a small run reads "0.000000142" MWh in the table.
    notes.extend(readable_summary(r) for r in rows if r.role == "run" and r.energy_j is not None)
    notes.extend(f"{r.model}: {r.efficiency.line()}" for r in rows if r.efficiency and r.efficiency.known)
    return notes


def to_rich(rows: Sequence[TableRow], notes: Sequence[str] | None = None) -> FittedTable:
    """A table for the terminal: a grid if it fits, else stacked; nothing is ever cut."""
    headers, cells, right = _cells_right(rows)
    return rich_grid(headers, cells, _notes(rows, notes), right)


def to_markdown(rows: Sequence[TableRow], notes: Sequence[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table, then the footnotes as a list."""
    headers, cells, right = _cells_right(rows)
    return markdown_grid(headers, cells, _notes(rows, notes), right)


def to_latex(rows: Sequence[TableRow], notes: Sequence[str] | None = None) -> str:
    """A booktabs tabular, then the footnotes in small type."""
    headers, cells, right = _cells_right(rows)
    return latex_grid(headers, cells, _notes(rows, notes), right)


def to_csv(rows: Sequence[TableRow], notes: Sequence[str] | None = None) -> str:
    """CSV of numbers: a range as min and max columns; no notes (they go to a separate file)."""
    from wattlog.accounting.publishing.exports import rows_csv

    del notes
    return rows_csv(rows)


def to_json(rows: Sequence[TableRow], notes: Sequence[str] | None = None) -> str:
    """JSON of every figure with its source and band, and the notes."""
    from wattlog.accounting.publishing.exports import rows_json

    return rows_json(rows, _notes(rows, notes))


def to_html(rows: Sequence[TableRow], notes: Sequence[str] | None = None) -> str:
    """An HTML table (every text escaped), then the footnotes as a list."""
    headers, cells, right = _cells_right(rows)
    return html_grid(headers, cells, _notes(rows, notes), right)


def render(
    rows: Sequence[TableRow], fmt: TableFormat | str, notes: Sequence[str] | None = None
) -> RenderableType:
    """Render rows in `fmt` (rich|markdown|latex|csv|html|json); rich gives a renderable, the others text.

    Raises:
        ConfigError: `fmt` is hf, which describes one run
            (see wattlog.accounting.publishing.exports.hf_block).
    """
    renderers: dict[TableFormat, Callable[[Sequence[TableRow], Sequence[str] | None], RenderableType]] = {
        TableFormat.RICH: to_rich,
        TableFormat.MARKDOWN: to_markdown,
        TableFormat.LATEX: to_latex,
        TableFormat.CSV: to_csv,
        TableFormat.HTML: to_html,
        TableFormat.JSON: to_json,
    }
    fmt = TableFormat(fmt)
    if fmt not in renderers:
        raise ConfigError(
            f"--format {fmt} describes one run: give its name, e.g. wattlog table RUN --format hf"
        )
    return renderers[fmt](rows, notes)


def show(rendered: RenderableType, console: Console | None = None) -> None:
    """Print what :func:`render` or a ``*_grid`` function returned to stdout; text is printed as is."""
    if isinstance(rendered, str):
        print(rendered, end="" if rendered.endswith("\n") else "\n")
    else:
        (console or Console()).print(rendered)


def _cells_right(rows: Sequence[TableRow]) -> tuple[list[str], list[list[str]], set[int]]:
    headers, cells = table_cells(rows)
    text_columns = {HEADERS["model"], HEADERS["energy_source"]}
    return headers, cells, {i for i, h in enumerate(headers) if h not in text_columns}


def _notes(rows: Sequence[TableRow], notes: Sequence[str] | None) -> list[str]:
    return footnotes(rows) if notes is None else list(notes)
