"""Software Carbon Intensity (ISO/IEC 21031:2024): SCI = (E x I + M) per R, location-based only.

- E: the phase's energy at its widest boundary (facility where a site was recorded), kWh;
- I: the location-based grid intensity the figures used (the energy-weighted mean of an
  hourly series), g CO2e/kWh. The standard admits no market-based figure: certificates,
  PPAs and offsets never lower an SCI score;
- M: the devices' embodied emissions amortised over the phase's GPU-hours, g CO2e;
- R: the functional unit: one token, and one FLOP (10^18 FLOP for a readable figure).

A figure that cannot be computed is "-" with the reason, and the command exits non-zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from wattlog.accounting.publishing.disclosure.mdf import MISSING, sig
from wattlog.accounting.publishing.disclosure.model import Boundary, Disclosure, PhaseFigures
from wattlog.accounting.ranges import midpoint

MARKET_REFUSAL = (
    "SCI (ISO/IEC 21031) admits only location-based intensity: certificates, PPAs and offsets never lower "
    "an SCI score; run with --method location (market-based figures: `wattlog scope2`)"
)
EFLOP = 1e18


@dataclass(frozen=True, slots=True)
class Sci:
    """One phase's SCI terms and scores (None: not computable, `missing` says why)."""

    phase: str
    energy_kwh: float | None
    boundary: str
    intensity_g_per_kwh: float | None
    embodied_g: float | None
    tokens: float | None
    flops: float | None
    missing: tuple[str, ...]

    @property
    def total_g(self) -> float | None:
        """E x I + M, g CO2e (M counts 0 only where the device has no embodied figure, said in `missing`)."""
        if self.energy_kwh is None or self.intensity_g_per_kwh is None:
            return None
        return self.energy_kwh * self.intensity_g_per_kwh + (self.embodied_g or 0.0)

    def per(self, units: float | None) -> float | None:
        """The score per functional unit."""
        total = self.total_g
        return None if total is None or not units else total / units


def sci_of(phase: PhaseFigures) -> Sci:
    """The SCI terms of a phase."""
    missing = []
    outer = phase.at(Boundary.FACILITY)
    if outer is None:
        missing.append("no facility energy (no site recorded): E x I not computable")
    intensity = None
    if outer is not None and phase.co2_t is not None and outer.energy_j > 0:
        intensity = midpoint(phase.co2_t) * 1e6 / (outer.energy_j / 3.6e6)  # g per kWh
    embodied = None if phase.embodied_t is None else phase.embodied_t * 1e6
    if embodied is None:
        missing.append("no embodied figure for the device model (M left out)")
    if not phase.tokens:
        missing.append("tokens not reported by the trainer: no score per token")
    if not phase.flops:
        missing.append("FLOPs not reported by the trainer: no score per FLOP")
    energy_kwh = None if outer is None else outer.energy_j / 3.6e6
    return Sci(
        phase.phase, energy_kwh, "facility", intensity, embodied, phase.tokens, phase.flops, tuple(missing)
    )


def to_sci(disclosure: Disclosure) -> tuple[str, bool]:
    """The SCI of every phase as text, and whether every score could be computed."""
    lines = [
        f"SCI (ISO/IEC 21031:2024), location-based, {disclosure.scope} {disclosure.subject}: "
        "(E x I + M) per R",
        "",
    ]
    complete = True
    for phase in disclosure.phases:
        sci = sci_of(phase)
        per_token, per_eflop = sci.per(sci.tokens), sci.per(None if sci.flops is None else sci.flops / EFLOP)
        complete = complete and not sci.missing
        lines += [
            f"{sci.phase}: E {sig(sci.energy_kwh)} kWh ({sci.boundary}), "
            f"I {sig(sci.intensity_g_per_kwh)} g CO2e/kWh (location-based), "
            f"M {sig(sci.embodied_g)} g CO2e (embodied)",
            f"  SCI per token: {_g(per_token)}; "
            f"per FLOP: {_g(None if per_eflop is None else per_eflop / EFLOP)}"
            f" ({_g(per_eflop)} per 10^18 FLOP)",
            *(f"  not computed: {reason}" for reason in sci.missing),
        ]
    return "\n".join(lines) + "\n", complete


def _g(value: float | None) -> str:
    return MISSING if value is None else f"{value:.3e} g CO2e"
