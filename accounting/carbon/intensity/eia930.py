"""EIA-930 hourly balancing-authority data (EIA930_BALANCE_*.csv): generation by fuel x per-fuel factors.

Columns ``Balancing Authority``, ``UTC Time at End of Hour`` and ``Net Generation (MW)
from <fuel>``. EIA-930 gives generation, not intensity: the intensity of an hour is
its generation-weighted mean of per-fuel factors (:data:`EIA_FACTORS`, each with its
source). An hour is estimated when EIA imputed its generation (``Net Generation (MW)
(Imputed)`` filled) or when a fuel without a published factor (petroleum, other,
unknown) generated in it. A site's zone is the balancing authority.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from wattlog.accounting.carbon.intensity import tabular
from wattlog.accounting.carbon.intensity.base import (
    HourlySeries,
    HourProvenance,
    IntensityRef,
    OpenContext,
    RegisteredSource,
)
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError

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


def from_eia930(path: Path | str, *, authority: str | None = None) -> HourlySeries:
    """Read an EIA-930 hourly balancing-authority file; intensity from generation by fuel x factors.

    Args:
        path: An EIA930_BALANCE_*.csv file.
        authority: Balancing authority code (e.g. "ERCO"); needed when the file holds several.

    Raises:
        ConfigError: Missing columns, several authorities without `authority`, a malformed line.
    """
    path = Path(path)
    header, rows = tabular.rows(path)
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
        hour = tabular.hour(row[EIA_TIME], "%m/%d/%Y %I:%M:%S %p", path, line) - HOUR_S  # hour *ending*
        try:
            generation = {f: tabular.number(row[EIA_FUEL_PREFIX + f]) or 0.0 for f in fuels}
        except ValueError:
            raise ConfigError(f"{path}, line {line}: generation is not a number") from None
        mixed = mix_intensity(generation)
        if mixed is None:
            raise ConfigError(f"{path}, line {line}: no generation in the hour ending {row[EIA_TIME]}")
        if hour in values:
            raise ConfigError(f"{path}, line {line}: hour ending {row[EIA_TIME]} appears twice")
        values[hour], assumed = mixed
        imputed = bool((row.get(EIA_IMPUTED) or "").strip())
        provenance[hour] = HourProvenance(
            f"EIA-930 {chosen}: generation by fuel x per-fuel factors", imputed or assumed
        )
    return tabular.series(values, provenance, path, f"EIA-930 {chosen}")


def mix_intensity(generation_mwh: Mapping[str, float]) -> tuple[float, bool] | None:
    """kg CO2e/kWh of one hour's generation by fuel (EIA-930 fuel names), and whether an assumed factor
    entered it; None when nothing was generated. Negative generation (storage charging) counts as 0.
    """
    total = sum(max(g, 0.0) for g in generation_mwh.values())
    if total <= 0:
        return None
    mean = sum(max(g, 0.0) * EIA_FACTORS[f][0] for f, g in generation_mwh.items()) / total
    return mean, any(g > 0 for f, g in generation_mwh.items() if f in _ASSUMED)


def _sniff(header: Sequence[str]) -> bool:
    return EIA_TIME in header


def _open(ref: IntensityRef, context: OpenContext) -> HourlySeries:
    del context
    return from_eia930(ref.series, authority=ref.zone or None)


SOURCE = RegisteredSource(
    "eia930", "EIA-930 balance CSV (zone: balancing authority)", _open, reads_file=True, sniff=_sniff
)
