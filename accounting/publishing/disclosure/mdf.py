"""The EU AI Act Model Documentation Form's energy and compute items, filled from the disclosure model.

The form (GPAI Code of Practice, Transparency chapter, 10 July 2025; AI Act Annex XI 2(d)-(e))
asks for training energy in MWh to at least two significant figures, whether it was measured
or estimated, a methodology of about 100 words, training time and training compute. It names
no boundary, so every figure here says which boundary it covers and the factor between them.
"""

from __future__ import annotations

import math

from wattlog.accounting.publishing.disclosure.model import (
    Basis,
    Boundary,
    BoundaryEnergy,
    Disclosure,
    PhaseFigures,
    SiteFactors,
)
from wattlog.accounting.ranges import Quantity, bounds

MISSING = "-"
_SOURCE_WORDS = {
    "counter": "the GPUs' hardware energy counters",
    "sampled": "integrated power readings",
    "estimated": "a labelled estimate (utilisation x TDP or an overhead factor)",
    "simulated": "a simulated device (not a measurement)",
    "extrapolated": "measured nodes scaled to the job's node count",
}


def sig(value: float | None, figures: int = 3) -> str:
    """`value` to `figures` significant figures without an exponent ("-" for None).

    >>> sig(1022.4), sig(0.0012345), sig(31.22, 2), sig(None)
    ('1,020', '0.00123', '31', '-')
    """
    if value is None:
        return MISSING
    if value == 0:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    rounded = round(value, figures - 1 - exponent)
    return f"{rounded:,.{max(0, figures - 1 - exponent)}f}"


def sig_quantity(value: Quantity | None, figures: int = 3) -> str:
    """A figure or a range ("a - b") to `figures` significant figures."""
    if value is None:
        return MISSING
    low, high = bounds(value)
    return sig(low, figures) if low == high else f"{sig(low, figures)} - {sig(high, figures)}"


def energy_text(energy: BoundaryEnergy) -> str:
    """E.g. "131 MWh (band 125 - 138 MWh; source counter)"."""
    low, high = energy.band_mwh
    return f"{sig(energy.mwh)} MWh (band {sig(low)} - {sig(high)} MWh; source {energy.source})"


def boundary_lines(phase: PhaseFigures) -> list[str]:
    """One line per boundary and the factors between them ("-" where unknown)."""
    lines = []
    for boundary in Boundary:
        found = phase.at(boundary)
        lines.append(f"  - {boundary.value}: {energy_text(found) if found else MISSING}")
    rest = phase.factor(Boundary.NODE, Boundary.GPU)
    pue = phase.factor(Boundary.FACILITY, Boundary.NODE)
    lines.append(f"  - node / GPU factor: {sig(rest, 4)}; facility / node factor (PUE): {sig(pue, 4)}")
    return lines


def phase_items(phase: PhaseFigures) -> list[str]:
    """The form's energy and compute items for one phase."""
    outer = phase.outer
    stated = f"{sig(outer.mwh)} MWh at the {outer.boundary.value} boundary" if outer is not None else "N/A"
    gpu_days = f"{sig(phase.gpu_days)} GPU-days ({phase.gpus} GPUs at most at once)"
    return [
        f"### Phase: {phase.phase} ({len(phase.runs)} run(s))",
        "",
        f"- Amount of energy used for training: {stated}; {_basis_words(phase.basis)}",
        "- Energy by boundary:",
        *boundary_lines(phase),
        f"- Training time: {sig(phase.wall_clock_days)} wall-clock days; {gpu_days}",
        f"- Amount of computation used for training: {_flops_text(phase)}",
        f"- Emissions (location-based): {sig_quantity(phase.co2_t)} t CO2e",
        f"- Gaps: {phase.gap_count} ({_gap_hours(phase)} device-hours), recorded and not filled in",
        f"- Validity: {_validity_text(phase.invalid)}",
        *(f"- Site {s.site}: {_site_text(s)}" for s in phase.sites),
        *(f"- Note: {note}" for note in phase.notes),
        "",
        "Measurement methodology:",
        "",
        methodology(phase),
        "",
    ]


def _gap_hours(phase: PhaseFigures) -> str:
    return sig(phase.gap_device_s / 3600.0) if phase.gap_count else "0"


def _validity_text(reasons: tuple[str, ...], shown: int = 3, width: int = 160) -> str:
    if not reasons:
        return "valid (every run passed the validity gate)"
    cut = [r if len(r) <= width else r[: width - 3] + "..." for r in reasons[:shown]]
    more = f"; and {len(reasons) - shown} more (all in --format json)" if len(reasons) > shown else ""
    return f"NOT VALID ({len(reasons)} reason(s)): {'; '.join(cut)}{more}"


def _basis_words(basis: Basis) -> str:
    if basis == Basis.MEASURED:
        return "measured"
    if basis == Basis.SIMULATED:
        return "simulated (NOT a measurement: not for publication as measured)"
    if basis == Basis.ESTIMATED:
        return "estimated in part (see the sources)"
    return "not recorded"


def _flops_text(phase: PhaseFigures) -> str:
    if phase.flops is None:
        return f"{MISSING} (not reported by every run's trainer)"
    return (
        f"{phase.flops:.2e} FLOP ({phase.tokens:.3g} tokens)" if phase.tokens else f"{phase.flops:.2e} FLOP"
    )


def _site_text(site: SiteFactors) -> str:
    return (
        f"PUE {sig_quantity(site.pue, 4)} ({site.pue_source}); carbon intensity "
        f"{sig_quantity(site.intensity_kg_per_kwh, 3)} kg CO2e/kWh ({site.intensity_source}); "
        f"WUE {sig_quantity(site.wue_l_per_kwh, 3)} L/kWh ({site.wue_source})"
    )


def methodology(phase: PhaseFigures) -> str:
    """About 100 words saying what was measured, how, when, with which factors and what is missing."""
    sensors = sorted({p for e in phase.energy for p in e.source.split("+") if p in _SOURCE_WORDS})
    how = ", ".join(_SOURCE_WORDS[s] for s in sensors) or "no recorded energy"
    gpu, node = phase.at(Boundary.GPU), phase.at(Boundary.NODE)
    parts = [
        f"Energy was recorded by wattlog's node agents from {how}, over "
        f"{len(phase.runs)} run(s) spanning {sig(phase.wall_clock_days)} days "
        f"and {sig(phase.gpu_days)} GPU-days.",
        f"GPU energy ({gpu.source}) is kept per device;" if gpu else "No GPU-only figure was kept;",
        f"node energy ({node.source}) adds the rest of each server."
        if node
        else "no node energy was recorded.",
    ]
    if phase.sites:
        factors = "; ".join(
            f"{s.site}: PUE {sig_quantity(s.pue, 4)}, source: {s.pue_source}" for s in phase.sites
        )
        base = "node energy" if node else "GPU energy (the rest of the server not counted)"
        parts.append(
            f"Facility energy is {base} times PUE ({factors}); emissions use location-based intensity."
        )
    else:
        parts.append("No site was recorded, so no facility energy or emissions are given.")
    if phase.gap_count:
        parts.append(
            f"{phase.gap_count} gap(s) totalling {_gap_hours(phase)} device-hours were recorded and not "
            "filled in; the band is widened by them."
        )
    else:
        parts.append("No gaps (agent down, sensor lost) were recorded.")
    parts.append("Every run passed the validity gate." if not phase.invalid else
                 f"The validity gate flagged {len(phase.invalid)} reason(s) (listed above).")  # fmt: skip
    return " ".join(parts)


def to_mdf(disclosure: Disclosure) -> str:
    """The form's energy and compute items for every phase, as Markdown."""
    lines = [
        f"## Model Documentation Form: energy and compute ({disclosure.scope} {disclosure.subject})",
        "",
        f"Model: {disclosure.model or MISSING}. Measured with {disclosure.tool}. "
        "Energy is stated per boundary "
        "(GPU, node = IT energy of the servers, facility = node x PUE); the form defines none.",
        "",
    ]
    for phase in disclosure.phases:
        lines.extend(phase_items(phase))
    lines.extend(f"- Excluded: {item}" for item in disclosure.excluded)
    return "\n".join(lines).rstrip() + "\n"
