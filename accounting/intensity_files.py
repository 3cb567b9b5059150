"""Hourly carbon intensity from the public files users have: Electricity Maps and EIA-930.

- Electricity Maps' hourly CSV (app.electricitymaps.com/datasets): columns
  ``Datetime (UTC)``, ``Zone Id``, ``Carbon Intensity gCO₂eq/kWh (direct)``,
  ``Carbon Intensity gCO₂eq/kWh (LCA)``, ``Data Source``, ``Data Estimated``
  (among others). The direct (operational) intensity is used by default, as the
  OLMo 2 paper's figures are; ``lca`` picks the life-cycle one.
- EIA-930 hourly balancing-authority data (EIA930_BALANCE_*.csv): columns
  ``Balancing Authority``, ``UTC Time at End of Hour`` and ``Net Generation (MW)
  from <fuel>``. EIA-930 gives generation, not intensity: the intensity of an
  hour is its generation-weighted mean of per-fuel factors (:data:`EIA_FACTORS`,
  each with its source). An hour is estimated when EIA imputed its generation
  (``Net Generation (MW) (Imputed)`` filled) or when a fuel without a published
  factor (petroleum, other, unknown) generated in it.

Each hour keeps its source and whether the provider marked it estimated
(:class:`wattlog.accounting.intensity.HourProvenance`); the plain
``timestamp,kg_co2_per_kwh`` CSV stays :meth:`HourlySeries.from_csv`.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from wattlog.accounting.intensity import HOUR_S, HourlySeries, HourProvenance
from wattlog.errors import ConfigError

EM_TIME = "Datetime (UTC)"
EM_DIRECT = "Carbon Intensity gCO₂eq/kWh (direct)"
EM_LCA = "Carbon Intensity gCO₂eq/kWh (LCA)"
EIA_TIME = "UTC Time at End of Hour"
EIA_FUEL_PREFIX = "Net Generation (MW) from "
EIA_IMPUTED = "Net Generation (MW) (Imputed)"

_IPCC = "IPCC AR5 WGIII (2014), Annex III, Table A.III.2: life-cycle median"
_US = "no IPCC median for this fuel: the US average, 0.366 kg/kWh (US EIA FAQ, 2023), assumed"
EIA_FACTORS: Mapping[str, tuple[float, str]] = {
    "Coal": (0.820, _IPCC),
    "Natural Gas": (0.490, _IPCC),
    "Nuclear": (0.012, _IPCC),
    "Hydropower and Pumped Storage": (0.024, _IPCC),
    "Solar": (0.048, _IPCC + " (utility PV)"),
    "Wind": (0.011, _IPCC + " (onshore)"),
    "All Petroleum Products": (0.366, _US),
    "Other Fuel Sources": (0.366, _US),
    "Unknown Fuel Sources": (0.366, _US),
}
"""kg CO2e per kWh of each EIA-930 fuel column, with its source."""
_ASSUMED = {fuel for fuel, (_, source) in EIA_FACTORS.items() if source == _US}


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise ConfigError(f"cannot read intensity series {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(
            f"{path} is not a text file; expected CSV (timestamp,kg_co2_per_kwh), Electricity Maps or EIA-930"
        ) from None
    reader = csv.DictReader(line for line in text.splitlines() if line.strip())
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def detect_format(path: Path | str) -> str:
    """ "electricitymaps", "eia930" or "csv" (timestamp,kg_co2_per_kwh), from the file's header."""
    header, _ = _rows(Path(path))
    if EM_TIME in header:
        return "electricitymaps"
    if EIA_TIME in header:
        return "eia930"
    return "csv"


def _hour(stamp: str, fmt: str | None, path: Path, line: int) -> int:
    try:
        moment = datetime.strptime(stamp.strip(), fmt) if fmt else datetime.fromisoformat(stamp.strip())
    except ValueError:
        raise ConfigError(f"{path}, line {line}: timestamp {stamp!r} is not a date and time") from None
    t_s = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    if t_s % HOUR_S:
        raise ConfigError(f"{path}, line {line}: timestamp {stamp!r} is not on the hour")
    return int(t_s)


def _number(text: str | None) -> float | None:
    text = (text or "").replace(",", "").strip()
    return float(text) if text else None


def from_electricitymaps(path: Path | str, *, lca: bool = False) -> HourlySeries:
    """Read an Electricity Maps hourly CSV (gCO2eq/kWh -> kg/kWh), keeping each hour's source and flag.

    Raises:
        ConfigError: Missing columns, a malformed line, or an hour given twice.
    """
    path = Path(path)
    header, rows = _rows(path)
    column = EM_LCA if lca else EM_DIRECT
    if EM_TIME not in header or column not in header:
        raise ConfigError(f"{path}: not an Electricity Maps hourly CSV (needs '{EM_TIME}' and '{column}')")
    values: dict[int, float] = {}
    provenance: dict[int, HourProvenance] = {}
    zone = ""
    for line, row in enumerate(rows, start=2):
        hour = _hour(row[EM_TIME], None, path, line)
        try:
            grams = _number(row[column])
        except ValueError:
            raise ConfigError(f"{path}, line {line}: intensity {row[column]!r} is not a number") from None
        if grams is None or grams < 0:
            raise ConfigError(f"{path}, line {line}: no intensity for {row[EM_TIME]}")
        if hour in values:
            raise ConfigError(f"{path}, line {line}: hour {row[EM_TIME]} appears twice")
        zone = row.get("Zone Id", "") or zone
        values[hour] = grams / 1000.0
        data_source = (row.get("Data Source") or "").strip()
        provenance[hour] = HourProvenance(
            f"Electricity Maps{f' ({data_source})' if data_source else ''}, {'LCA' if lca else 'direct'}",
            (row.get("Data Estimated") or "").strip().lower() in {"true", "1", "yes"},
        )
    return _series(values, provenance, path, f"Electricity Maps {zone}".strip())


def from_eia930(path: Path | str, *, authority: str | None = None) -> HourlySeries:
    """Read an EIA-930 hourly balancing-authority file; intensity from generation by fuel x factors.

    Args:
        path: An EIA930_BALANCE_*.csv file.
        authority: Balancing authority code (e.g. "ERCO"); needed when the file holds several.

    Raises:
        ConfigError: Missing columns, several authorities without `authority`, a malformed line.
    """
    path = Path(path)
    header, rows = _rows(path)
    fuels = [h[len(EIA_FUEL_PREFIX) :] for h in header if h.startswith(EIA_FUEL_PREFIX)]
    if EIA_TIME not in header or not fuels:
        raise ConfigError(f"{path}: not an EIA-930 balance file (needs '{EIA_TIME}' and generation by fuel)")
    unknown = [f for f in fuels if f not in EIA_FACTORS]
    if unknown:
        raise ConfigError(f"{path}: no emission factor for fuel column(s) {', '.join(unknown)}")
    authorities = sorted({r.get("Balancing Authority", "") for r in rows})
    if authority is None and len(authorities) > 1:
        raise ConfigError(f"{path} holds {', '.join(authorities)}: pass --authority CODE")
    chosen = authority or (authorities[0] if authorities else "")
    values: dict[int, float] = {}
    provenance: dict[int, HourProvenance] = {}
    for line, row in enumerate(rows, start=2):
        if row.get("Balancing Authority", "") != chosen:
            continue
        hour = _hour(row[EIA_TIME], "%m/%d/%Y %I:%M:%S %p", path, line) - HOUR_S  # hour *ending*
        try:
            generation = {f: _number(row[EIA_FUEL_PREFIX + f]) or 0.0 for f in fuels}
        except ValueError:
            raise ConfigError(f"{path}, line {line}: generation is not a number") from None
        total = sum(max(g, 0.0) for g in generation.values())
        if total <= 0:
            raise ConfigError(f"{path}, line {line}: no generation in the hour ending {row[EIA_TIME]}")
        if hour in values:
            raise ConfigError(f"{path}, line {line}: hour ending {row[EIA_TIME]} appears twice")
        values[hour] = sum(max(g, 0.0) * EIA_FACTORS[f][0] for f, g in generation.items()) / total
        imputed = bool((row.get(EIA_IMPUTED) or "").strip())
        assumed = any(generation[f] > 0 for f in fuels if f in _ASSUMED)
        provenance[hour] = HourProvenance(
            f"EIA-930 {chosen}: generation by fuel x per-fuel factors", imputed or assumed
        )
    return _series(values, provenance, path, f"EIA-930 {chosen}")


def _series(
    values: dict[int, float], provenance: dict[int, HourProvenance], path: Path, provider: str
) -> HourlySeries:
    if not values:
        raise ConfigError(f"{path}: no intensity rows")
    estimated = sum(p.estimated for p in provenance.values())
    origin = f"{path} ({provider}; {estimated} of {len(values)} hours marked estimated)"
    return HourlySeries(dict(sorted(values.items())), origin, dict(sorted(provenance.items())))


def read_intensity(path: Path | str, fmt: str = "auto", *, authority: str | None = None) -> HourlySeries:
    """Read any supported hourly file; `fmt` auto|csv|electricitymaps|electricitymaps-lca|eia930."""
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt == "csv":
        return HourlySeries.from_csv(path)
    if fmt in ("electricitymaps", "electricitymaps-lca"):
        return from_electricitymaps(path, lca=fmt.endswith("lca"))
    if fmt == "eia930":
        return from_eia930(path, authority=authority)
    raise ConfigError(
        f"unknown intensity format {fmt!r}: use auto, csv, electricitymaps, electricitymaps-lca or eia930"
    )
