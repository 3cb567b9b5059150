"""Machine-readable exports of a table: CSV of numbers, JSON with sources, a Hugging Face model-card block.

- CSV: one row per table row; each figure as ``<column>_min`` and ``<column>_max``
  (equal for a single value, empty where no figure is given), full precision, never in
  scientific notation; the energy also in joules (``total_power_j_min`` ...) beside MWh.
  Notes never go into the CSV (a parser would read them as data): `wattlog table
  --format csv --notes FILE` writes them to their own file.
- JSON: every figure with its unit, value (the mid of a range), min, max, the text
  a table prints, and its source; the energy's band; the energy in joules beside MWh;
  each row's notes; the table's notes. Numbers never in scientific notation.
- Both: the validity gate's verdict on a run's row, ``valid`` (true/false; empty or null
  where the row was not gated) and its ``invalid_reasons``.
- HF: the ``co2_eq_emissions`` block of a model card's YAML metadata (Hugging Face
  Hub, "Displaying carbon emissions for your model"): emissions in grams of CO2,
  source, training_type, geographical_location, hardware_used.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from wattlog.accounting.publishing.efficiency import Efficiency
from wattlog.accounting.publishing.grids import csv_text
from wattlog.accounting.publishing.render import FIGURE_COLUMNS, HEADERS, TableRow
from wattlog.accounting.ranges import Quantity, Range, bounds
from wattlog.accounting.units import mwh_of

UNITS = {
    "total_power_mwh": "MWh",
    "pue": "",
    "carbon_intensity_kg_per_kwh": "kg CO2e/kWh",
    "co2_t": "t CO2e",
    "wue_l_per_kwh": "L/kWh",
    "water_kl": "kL",
}
"""The unit of each figure column."""


def plain(value: float) -> str:
    """A number at full precision and never in scientific notation.

    >>> plain(7.16e-09), plain(131.0), plain(2.5e20)
    ('0.00000000716', '131.0', '250000000000000000000')
    """
    return format(Decimal(repr(value)), "f")


def _ends(value: Quantity | None) -> tuple[str, str]:
    if value is None:
        return "", ""
    lo, hi = bounds(value)
    return plain(lo), plain(hi)


def _number(value: float | str | None) -> str:
    """A CSV cell: empty where unknown."""
    if value is None:
        return ""
    return plain(value) if isinstance(value, float) else str(value)


_EXPONENT = re.compile(r"(?<= )-?\d+(?:\.\d+)?[eE][-+]?\d+(?=,?$)", re.MULTILINE)
"""A number in exponent form at the end of a line of indented JSON (a string there ends in a quote)."""


def _json_text(document: object) -> str:
    """`document` as indented JSON whose numbers are positional (json writes 7.16e-09 otherwise)."""
    text = json.dumps(document, indent=2, ensure_ascii=False)
    return _EXPONENT.sub(lambda m: plain(float(m.group(0))), text) + "\n"


def _joules(value: Quantity | None) -> dict[str, float] | None:
    if value is None:
        return None
    lo, hi = bounds(value)
    return {"value": Range(lo, hi).mid, "min": lo, "max": hi}


def rows_csv(rows: Sequence[TableRow]) -> str:
    """CSV with a range's ends in ``_min``/``_max`` columns, numbers at full precision, no comment lines."""
    extra = list(dict.fromkeys(header for r in rows for header, _ in r.extra))
    header = ["model", "row", "energy_source", "energy_basis"]
    for column in FIGURE_COLUMNS:
        header += [f"{column}_min", f"{column}_max"]
    header += ["energy_band_mwh_min", "energy_band_mwh_max", "gpu_mwh", "host_mwh"]
    header += ["total_power_j_min", "total_power_j_max", "energy_band_j_min", "energy_band_j_max"]
    efficiency = list(Efficiency().fields())
    header += ["gpu_j", "host_j", *efficiency, "valid", "invalid_reasons", *extra]  # a run's own columns last
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for r in rows:
        line = [csv_text(r.model), csv_text(r.role), r.energy_source, r.energy_basis]
        for column in FIGURE_COLUMNS:
            line += _ends(r.figure(column))
        line += _ends(mwh_of(r.energy_band_j))
        line += [_ends(mwh_of(r.gpu_j))[0], _ends(mwh_of(r.host_j))[0]]
        line += [*_ends(r.energy_j), *_ends(r.energy_band_j)]
        line += [_ends(r.gpu_j)[0], _ends(r.host_j)[0]]
        line += [_number((r.efficiency or Efficiency()).fields()[name]) for name in efficiency]
        valid = "" if r.validity is None else str(not r.validity).lower()
        line += [valid, csv_text("; ".join(r.validity or ()))]
        texts = dict(r.extra)
        line += [csv_text(texts.get(h, "")) for h in extra]
        writer.writerow(line)
    return buffer.getvalue()


def _figure(row: TableRow, column: str) -> dict[str, object] | None:
    value = row.figure(column)
    if value is None:
        return None
    lo, hi = bounds(value)
    return {
        "unit": UNITS[column],
        "value": Range(lo, hi).mid,
        "min": lo,
        "max": hi,
        "text": row.cell(column),
        "source": row.sources.get(column) or (row.energy_source if column == "total_power_mwh" else ""),
    }


def row_dict(row: TableRow) -> dict[str, object]:
    """One row as plain data: figures with unit, min, max, printed text and source; band; notes."""
    band = mwh_of(row.energy_band_j)
    return {
        "model": row.model,
        "row": row.role,
        "energy_source": row.energy_source,
        "energy_basis": row.energy_basis,
        "figures": {column: _figure(row, column) for column in FIGURE_COLUMNS},
        "energy_band_mwh": None if band is None else dict(zip(("min", "max"), bounds(band), strict=True)),
        "gpu_mwh": mwh_of(row.gpu_j),
        "host_mwh": mwh_of(row.host_j),
        "energy_j": _joules(row.energy_j),
        "energy_band_j": _joules(row.energy_band_j),
        "gpu_j": row.gpu_j,
        "host_j": row.host_j,
        "hourly_intensity": row.hourly_intensity,
        "water_convention": None if row.convention is None else row.convention.value,
        "extra": {header: text for header, text in row.extra},
        "notes": list(dict.fromkeys(row.notes)),
        "valid": None if row.validity is None else not row.validity,
        "invalid_reasons": None if row.validity is None else list(row.validity),
        "efficiency": (row.efficiency or Efficiency()).fields(),  # null where unknown, never 0
    }


def rows_json(rows: Sequence[TableRow], notes: Sequence[str]) -> str:
    """JSON of the whole table: column headers, rows (see :func:`row_dict`) and the table's notes."""
    document = {
        "columns": {column: {"header": HEADERS[column], "unit": UNITS[column]} for column in FIGURE_COLUMNS},
        "rows": [row_dict(r) for r in rows],
        "notes": list(notes),
    }
    return _json_text(document)


@dataclass(frozen=True, slots=True)
class ModelCardFacts:
    """What a model card's carbon block says besides the emissions.

    Attributes:
        source: Where the figure comes from (tool, measurement, paper).
        training_type: "pre-training" or "fine-tuning" (the Hub's two values), or the stage.
        geographical_location: The site, as granular as known.
        hardware_used: E.g. "8 x NVIDIA H100 80GB".
    """

    source: str
    training_type: str
    geographical_location: str
    hardware_used: str


TRAINING_TYPES = {
    "pretraining": "pre-training",
    "mid-training": "pre-training",
    "sft": "fine-tuning",
    "dpo": "fine-tuning",
    "rl": "fine-tuning",
}
"""A run's stage -> the Hub's training_type (pre-training or fine-tuning)."""


def hf_block(row: TableRow, facts: ModelCardFacts) -> str:
    """The ``co2_eq_emissions`` YAML block of a Hugging Face model card for one run's row.

    Emissions are in grams of CO2e, as the Hub expects; a range gives its upper end
    (the conservative figure) and says so in ``source``.
    """
    if row.co2_t is None:
        emissions = "null"
        note = ""
    else:
        lo, hi = bounds(row.co2_t)
        emissions = _yaml_number(hi * 1e6)
        note = f" (upper end of {lo * 1e6:.6g}-{hi * 1e6:.6g} g)" if lo != hi else ""
    lines = [
        "co2_eq_emissions:",
        f"  emissions: {emissions}",
        f"  source: {json.dumps(facts.source + note, ensure_ascii=False)}",
        f"  training_type: {json.dumps(facts.training_type, ensure_ascii=False)}",
        f"  geographical_location: {json.dumps(facts.geographical_location, ensure_ascii=False)}",
        f"  hardware_used: {json.dumps(facts.hardware_used, ensure_ascii=False)}",
    ]
    return "\n".join(lines) + "\n"


def _yaml_number(value: float) -> str:
    """Grams as a plain number (no exponent), 6 significant figures."""
    text = f"{value:.6g}"
    return f"{value:.6f}".rstrip("0").rstrip(".") if "e" in text else text


def grids_json(grids: Sequence[object]) -> str:
    """JSON of titled grids (a project's Tables 1-3): title, headers, cells and notes of each."""
    return (
        json.dumps(
            [
                {
                    "title": getattr(g, "title", ""),
                    "headers": list(getattr(g, "headers", [])),
                    "rows": [
                        dict(zip(getattr(g, "headers", []), row, strict=True))
                        for row in getattr(g, "cells", [])
                    ],
                    "notes": list(getattr(g, "notes", [])),
                }
                for g in grids
            ],
            indent=2,
            ensure_ascii=False,
        )
        + "\n"
    )


def grids_csv(grids: Sequence[object]) -> str:
    """Several tables in one CSV, long form: table, row (its first cell), column, value (as printed)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["table", "row", "column", "value"])
    for g in grids:
        headers = list(getattr(g, "headers", []))
        for cells in getattr(g, "cells", []):
            for header, value in zip(headers[1:], cells[1:], strict=True):
                writer.writerow([getattr(g, "title", ""), csv_text(cells[0]), header, csv_text(value)])
    return buffer.getvalue()
