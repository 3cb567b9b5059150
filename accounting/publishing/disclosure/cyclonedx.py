"""A CycloneDX 1.6 ML-BOM whose model card's environmental considerations carry the disclosure's energy.

``modelCard.considerations.environmentalConsiderations.energyConsumptions[]``: one entry per
phase with ``activity`` (training; fine-tuning for post-training), ``energyProviders`` (the
site, its grid's sources unknown), ``activityEnergyCost`` in kWh at the phase's widest
boundary and ``co2CostEquivalent`` (location-based t CO2e, left out where unknown). No offset
is ever written: wattlog records none. The boundary, band, source and basis the schema has
no field for go in each entry's ``properties`` under the ``wattlog:`` namespace.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from wattlog.accounting.publishing.disclosure.mdf import methodology
from wattlog.accounting.publishing.disclosure.model import Boundary, Disclosure, PhaseFigures, PhaseName
from wattlog.accounting.ranges import midpoint

J_PER_KWH = 3.6e6
_ACTIVITY = {PhaseName.POST_TRAINING.value: "fine-tuning"}


def _properties(phase: PhaseFigures) -> list[dict[str, str]]:
    found = [
        {"name": "wattlog:phase", "value": phase.phase},
        {"name": "wattlog:basis", "value": phase.basis.value},
    ]
    for energy in phase.energy:
        key = f"wattlog:energy:{energy.boundary.value}"
        found += [
            {"name": f"{key}:kWh", "value": f"{energy.energy_j / J_PER_KWH:.6g}"},
            {
                "name": f"{key}:band-kWh",
                "value": f"{energy.low_j / J_PER_KWH:.6g}-{energy.high_j / J_PER_KWH:.6g}",
            },
            {"name": f"{key}:source", "value": energy.source},
        ]
    found.append({"name": "wattlog:methodology", "value": methodology(phase)})
    return found


def consumption(phase: PhaseFigures) -> dict[str, Any] | None:
    """One phase's energyConsumption entry (None: the phase has no energy)."""
    outer = phase.outer
    if outer is None:
        return None
    kwh = {"value": outer.energy_j / J_PER_KWH, "unit": "kWh"}
    sites = ", ".join(s.site for s in phase.sites) or "site not recorded"
    entry: dict[str, Any] = {
        "activity": _ACTIVITY.get(phase.phase, "training"),
        "energyProviders": [
            {
                "description": f"grid at {sites} ({outer.boundary.value} boundary)",
                "organization": {"name": sites},
                "energySource": "unknown",
                "energyProvided": kwh,
            }
        ],
        "activityEnergyCost": kwh,
    }
    if phase.co2_t is not None and phase.at(Boundary.FACILITY) is not None:
        entry["co2CostEquivalent"] = {"value": midpoint(phase.co2_t), "unit": "tCO2eq"}
    entry["properties"] = _properties(phase)
    return entry


def to_cyclonedx(disclosure: Disclosure, created_s: float) -> str:
    """The CycloneDX 1.6 JSON BOM (its serial number from the subject and time: same inputs, same BOM)."""
    created = datetime.fromtimestamp(created_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    serial = uuid.uuid5(uuid.NAMESPACE_URL, f"wattlog:{disclosure.scope}:{disclosure.subject}:{created}")
    entries = [e for e in (consumption(p) for p in disclosure.phases) if e is not None]
    name, _, version = disclosure.tool.partition(" ")
    bom = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": f"urn:uuid:{serial}",
        "version": 1,
        "metadata": {
            "timestamp": created,
            "tools": {"components": [{"type": "application", "name": name, "version": version}]},
        },
        "components": [
            {
                "type": "machine-learning-model",
                "bom-ref": f"wattlog:{disclosure.scope}:{disclosure.subject}",
                "name": disclosure.model or disclosure.subject,
                "modelCard": {
                    "considerations": {"environmentalConsiderations": {"energyConsumptions": entries}}
                },
            }
        ],
    }
    return json.dumps(bom, indent=2) + "\n"
