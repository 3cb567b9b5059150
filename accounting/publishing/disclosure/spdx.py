"""An SPDX 3.0.1 document (JSON-LD) whose AI package carries the disclosure's energy.

The AI profile's ``ai_energyConsumption`` holds ``ai_trainingEnergyConsumption`` and
``ai_finetuningEnergyConsumption`` lists of ``ai_EnergyConsumptionDescription`` (an
``ai_energyQuantity`` decimal and an ``ai_energyUnit``: kilowattHour, megajoule or other).
A description has no slot for its boundary, band or source, so each quantity is the
phase's widest boundary (the form's MWh) and ``ai_informationAboutTraining`` says which
boundary, band, source and method, phase by phase. Missing figures are left out, never 0.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from wattlog.accounting.publishing.disclosure.mdf import methodology, sig
from wattlog.accounting.publishing.disclosure.model import Disclosure, PhaseFigures, PhaseName

SPDX_CONTEXT = "https://spdx.org/rdf/3.0.1/spdx-context.jsonld"
J_PER_KWH = 3.6e6
_LISTS = {PhaseName.POST_TRAINING.value: "ai_finetuningEnergyConsumption"}
"""Which list a phase's figure goes in (every other phase is training)."""


def decimal_text(value: float) -> str:
    """A decimal string without an exponent (the schema's xsd:decimal pattern).

    >>> decimal_text(1188.0), decimal_text(0.0000036)
    ('1188.000000', '0.000004')
    """
    return f"{value:.6f}"


def phase_text(phase: PhaseFigures) -> str:
    """One phase's boundary, band, source and method, as ai_informationAboutTraining carries it."""
    outer = phase.outer
    if outer is None:
        return f"{phase.phase}: no energy recorded."
    low, high = outer.band_mwh
    return (
        f"{phase.phase}: {sig(outer.mwh)} MWh at the {outer.boundary.value} boundary (band {sig(low)} - "
        f"{sig(high)} MWh, source {outer.source}, {phase.basis.value}). {methodology(phase)}"
    )


def energy_consumption(disclosure: Disclosure) -> dict[str, Any]:
    """The ai_EnergyConsumption object: one description per phase with energy."""
    found: dict[str, Any] = {"type": "ai_EnergyConsumption"}
    for phase in disclosure.phases:
        outer = phase.outer
        if outer is None:
            continue
        entry = {
            "type": "ai_EnergyConsumptionDescription",
            "ai_energyQuantity": decimal_text(outer.energy_j / J_PER_KWH),
            "ai_energyUnit": "kilowattHour",
        }
        found.setdefault(_LISTS.get(phase.phase, "ai_trainingEnergyConsumption"), []).append(entry)
    return found


def to_spdx(disclosure: Disclosure, created_s: float) -> str:
    """The SPDX 3.0.1 JSON-LD document.

    Args:
        disclosure: What was measured.
        created_s: When the document is made, Unix s (the CLI's clock).
    """
    created = datetime.fromtimestamp(created_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = f"urn:wattlog:{disclosure.scope}:{disclosure.subject}"
    agent = f"{base}:agent"
    package = f"{base}:model"
    info = "_:creationinfo"
    graph: list[dict[str, Any]] = [
        {
            "type": "CreationInfo",
            "@id": info,
            "specVersion": "3.0.1",
            "created": created,
            "createdBy": [agent],
            "comment": f"written by {disclosure.tool} from its ledger",
        },  # fmt: skip
        {"type": "SoftwareAgent", "spdxId": agent, "name": disclosure.tool, "creationInfo": info},
        {
            "type": "ai_AIPackage",
            "spdxId": package,
            "name": disclosure.model or disclosure.subject,
            "creationInfo": info,
            "software_primaryPurpose": "model",
            "ai_energyConsumption": energy_consumption(disclosure),
            "ai_informationAboutTraining": " ".join(phase_text(p) for p in disclosure.phases),
        },
        {
            "type": "SpdxDocument",
            "spdxId": f"{base}:document",
            "name": f"energy of {disclosure.scope} {disclosure.subject}",
            "creationInfo": info,
            "profileConformance": ["core", "software", "ai"],
            "rootElement": [package],
            "element": [agent, package],
        },
    ]
    return json.dumps({"@context": SPDX_CONTEXT, "@graph": graph}, indent=2) + "\n"
