"""The disclosure model as JSON: every figure with its unit, band and source; missing is null, never 0."""

from __future__ import annotations

import json
from typing import Any

from wattlog.accounting.publishing.disclosure.mdf import methodology
from wattlog.accounting.publishing.disclosure.model import (
    Boundary,
    BoundaryEnergy,
    Disclosure,
    PhaseFigures,
    SiteFactors,
)
from wattlog.accounting.ranges import Quantity, bounds


def quantity(value: Quantity | None) -> float | list[float] | None:
    """A figure, a [low, high] range, or null."""
    if value is None:
        return None
    low, high = bounds(value)
    return low if low == high else [low, high]


def energy_dict(energy: BoundaryEnergy) -> dict[str, Any]:
    """One boundary's figure in MWh with its band and source."""
    low, high = energy.band_mwh
    return {"boundary": energy.boundary.value, "mwh": energy.mwh, "low_mwh": low, "high_mwh": high,
            "source": energy.source}  # fmt: skip


def site_dict(site: SiteFactors) -> dict[str, Any]:
    """A site's factors with their sources."""
    return {
        "site": site.site,
        "pue": quantity(site.pue),
        "pue_source": site.pue_source,
        "carbon_intensity_kg_per_kwh": quantity(site.intensity_kg_per_kwh),
        "carbon_intensity_source": site.intensity_source,
        "wue_l_per_kwh": quantity(site.wue_l_per_kwh),
        "wue_source": site.wue_source,
    }


def phase_dict(phase: PhaseFigures) -> dict[str, Any]:
    """One phase's figures."""
    return {
        "phase": phase.phase,
        "runs": list(phase.runs),
        "basis": phase.basis.value,
        "energy": [energy_dict(e) for e in phase.energy],
        "factors": {
            "node_over_gpu": phase.factor(Boundary.NODE, Boundary.GPU),
            "facility_over_node": phase.factor(Boundary.FACILITY, Boundary.NODE),
        },
        "wall_clock_days": phase.wall_clock_days,
        "gpu_days": phase.gpu_days,
        "gpus": phase.gpus,
        "flops": phase.flops,
        "tokens": phase.tokens,
        "gaps": {"count": phase.gap_count, "device_hours": phase.gap_device_s / 3600.0},
        "valid": not phase.invalid,
        "invalid_reasons": list(phase.invalid),
        "sites": [site_dict(s) for s in phase.sites],
        "co2_t_location_based": quantity(phase.co2_t),
        "period_unix_s": list(phase.period_s) if phase.period_s else None,
        "notes": list(phase.notes),
        "methodology": methodology(phase),
    }


def to_json(disclosure: Disclosure) -> str:
    """The whole disclosure as indented JSON."""
    document = {
        "subject": disclosure.subject,
        "scope": disclosure.scope,
        "model": disclosure.model or None,
        "tool": disclosure.tool,
        "phases": [phase_dict(p) for p in disclosure.phases],
        "excluded": list(disclosure.excluded),
    }
    return json.dumps(document, indent=2) + "\n"
