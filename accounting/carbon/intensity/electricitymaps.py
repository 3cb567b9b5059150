"""Electricity Maps' hourly CSV (app.electricitymaps.com/datasets), gCO2eq/kWh -> kg/kWh.

Columns ``Datetime (UTC)``, ``Zone Id``, ``Carbon Intensity gCO₂eq/kWh (direct)``,
``Carbon Intensity gCO₂eq/kWh (LCA)``, ``Data Source``, ``Data Estimated`` (among
others). The direct (operational) intensity is used by default, as the OLMo 2
paper's figures are; the ``electricitymaps-lca`` source picks the life-cycle one.
Each hour keeps its data source and whether Electricity Maps marked it estimated.
A site's zone is the ``Zone Id`` (rows of other zones are skipped).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from wattlog.accounting.carbon.intensity import tabular
from wattlog.accounting.carbon.intensity.base import (
    HourlySeries,
    HourProvenance,
    IntensityRef,
    OpenContext,
    RegisteredSource,
)
from wattlog.errors import ConfigError

EM_TIME = "Datetime (UTC)"
EM_DIRECT = "Carbon Intensity gCO₂eq/kWh (direct)"
EM_LCA = "Carbon Intensity gCO₂eq/kWh (LCA)"


def from_electricitymaps(path: Path | str, *, lca: bool = False, zone: str | None = None) -> HourlySeries:
    """Read an Electricity Maps hourly CSV (gCO2eq/kWh -> kg/kWh), keeping each hour's source and flag.

    Args:
        path: The CSV file.
        lca: Take the life-cycle intensity instead of the direct one.
        zone: Only rows of this ``Zone Id`` (None: every row).

    Raises:
        ConfigError: Missing columns, a malformed line, an hour given twice, or no row of `zone`.
    """
    path = Path(path)
    header, rows = tabular.rows(path)
    column = EM_LCA if lca else EM_DIRECT
    if EM_TIME not in header or column not in header:
        raise ConfigError(f"{path}: not an Electricity Maps hourly CSV (needs '{EM_TIME}' and '{column}')")
    values: dict[int, float] = {}
    provenance: dict[int, HourProvenance] = {}
    seen_zone = ""
    for line, row in enumerate(rows, start=2):
        if zone and row.get("Zone Id", "") != zone:
            continue
        hour = tabular.hour(row[EM_TIME], None, path, line)
        try:
            grams = tabular.number(row[column])
        except ValueError:
            raise ConfigError(f"{path}, line {line}: intensity {row[column]!r} is not a number") from None
        if grams is None or grams < 0:
            raise ConfigError(f"{path}, line {line}: no intensity for {row[EM_TIME]}")
        if hour in values:
            raise ConfigError(f"{path}, line {line}: hour {row[EM_TIME]} appears twice")
        seen_zone = row.get("Zone Id", "") or seen_zone
        values[hour] = grams / 1000.0
        data_source = (row.get("Data Source") or "").strip()
        provenance[hour] = HourProvenance(
            f"Electricity Maps{f' ({data_source})' if data_source else ''}, {'LCA' if lca else 'direct'}",
            (row.get("Data Estimated") or "").strip().lower() in {"true", "1", "yes"},
        )
    return tabular.series(values, provenance, path, f"Electricity Maps {seen_zone}".strip())


def _sniff(header: Sequence[str]) -> bool:
    return EM_TIME in header


def _open_direct(ref: IntensityRef, context: OpenContext) -> HourlySeries:
    del context
    return from_electricitymaps(ref.series, zone=ref.zone or None)


def _open_lca(ref: IntensityRef, context: OpenContext) -> HourlySeries:
    del context
    return from_electricitymaps(ref.series, lca=True, zone=ref.zone or None)


DIRECT = RegisteredSource(
    "electricitymaps", "Electricity Maps hourly CSV (direct)", _open_direct, reads_file=True, sniff=_sniff
)
LCA = RegisteredSource(
    "electricitymaps-lca", "Electricity Maps hourly CSV (life-cycle)", _open_lca, reads_file=True
)
