"""What was measured and how, for a run or a project's phases: the one model every form is written from.

Energy is given per boundary, each a figure with its band and source, never summed
across boundaries:

- ``gpu``       the accelerators as their sensors measured them;
- ``node``      the IT energy of the servers (GPUs plus CPU/DRAM measured, or a labelled overhead);
- ``facility``  node energy x PUE (derived, the PUE's source named).

A figure nobody gave is None (printed "-"), never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from wattlog.accounting.ranges import Quantity

J_PER_MWH = 3.6e9
S_PER_DAY = 86_400.0


class Boundary(StrEnum):
    """What an energy figure covers."""

    GPU = "gpu"
    NODE = "node"
    FACILITY = "facility"


class Basis(StrEnum):
    """How a phase's energy was obtained (the form asks: measured or estimated)."""

    MEASURED = "measured"
    ESTIMATED = "estimated"
    SIMULATED = "simulated"
    NONE = "not recorded"


class PhaseName(StrEnum):
    """The phases a project's disclosure reports apart (Morrison et al. 2025; Olmo 3)."""

    DEVELOPMENT = "development"
    FINAL = "final"
    POST_TRAINING = "post-training"


@dataclass(frozen=True, slots=True)
class BoundaryEnergy:
    """One boundary's energy with its band and source.

    Attributes:
        boundary: What it covers.
        energy_j: The figure, J.
        low_j: Low end of its band, J.
        high_j: High end of its band, J.
        source: counter, sampled, estimated, simulated, extrapolated (or a "+" mix); "derived" for facility.
    """

    boundary: Boundary
    energy_j: float
    low_j: float
    high_j: float
    source: str

    @property
    def mwh(self) -> float:
        """The figure in MWh."""
        return self.energy_j / J_PER_MWH

    @property
    def band_mwh(self) -> tuple[float, float]:
        """The band in MWh."""
        return self.low_j / J_PER_MWH, self.high_j / J_PER_MWH

    def plus(self, other: BoundaryEnergy) -> BoundaryEnergy:
        """The sum of two figures of the same boundary (sources joined)."""
        assert other.boundary == self.boundary, "never summed across boundaries"
        sources = sorted({*self.source.split("+"), *other.source.split("+")})
        return BoundaryEnergy(
            self.boundary,
            self.energy_j + other.energy_j,
            self.low_j + other.low_j,
            self.high_j + other.high_j,
            "+".join(sources),
        )


@dataclass(frozen=True, slots=True)
class SiteFactors:
    """A site's factors as the figures used them, each with its source."""

    site: str
    pue: Quantity
    pue_source: str
    intensity_kg_per_kwh: Quantity
    intensity_source: str
    wue_l_per_kwh: Quantity
    wue_source: str


@dataclass(frozen=True, slots=True)
class PhaseFigures:
    """What was measured in one phase (or one run), and how.

    Attributes:
        phase: development, final or post-training (a run: its own phase).
        runs: The runs it covers.
        energy: Per boundary, in gpu, node, facility order; a boundary not known for every run is absent.
        basis: measured, estimated, simulated or not recorded.
        wall_clock_days: First start to last end, days (None: nothing ran).
        gpu_days: GPU-days (GPU-hours / 24).
        gpus: Most GPUs any one run used.
        flops: Training FLOPs (tokens x FLOPs per token) where every run reported them, else None.
        tokens: Tokens trained on where reported, else None.
        gap_count: Gaps (agent down, sensor lost): recorded, never filled in.
        gap_device_s: Device-seconds inside gaps.
        invalid: "run: reason" for each validity reason against a run.
        sites: The site factors used.
        co2_t: Location-based emissions, t CO2e (None: no site for some run).
        period_s: (first start, last end), Unix s.
        notes: Other caveats, one line each.
        embodied_t: Embodied emissions amortised over the GPU-hours, t CO2e (None: no figure for a device).
    """

    phase: str
    runs: tuple[str, ...]
    energy: tuple[BoundaryEnergy, ...]
    basis: Basis
    wall_clock_days: float | None
    gpu_days: float | None
    gpus: int
    flops: float | None
    tokens: float | None
    gap_count: int
    gap_device_s: float
    invalid: tuple[str, ...]
    sites: tuple[SiteFactors, ...]
    co2_t: Quantity | None
    period_s: tuple[float, float] | None
    notes: tuple[str, ...] = ()
    embodied_t: float | None = None

    def at(self, boundary: Boundary) -> BoundaryEnergy | None:
        """The figure at `boundary`, or None where not known."""
        return next((e for e in self.energy if e.boundary == boundary), None)

    def factor(self, outer: Boundary, inner: Boundary) -> float | None:
        """outer / inner energy (node/GPU: rest of server; facility/node: PUE); None if one is absent."""
        a, b = self.at(outer), self.at(inner)
        if a is None or b is None or b.energy_j <= 0:
            return None
        return a.energy_j / b.energy_j

    @property
    def outer(self) -> BoundaryEnergy | None:
        """The widest boundary known (the form's MWh): facility, else node, else GPU."""
        for boundary in (Boundary.FACILITY, Boundary.NODE, Boundary.GPU):
            if (found := self.at(boundary)) is not None:
                return found
        return None


@dataclass(frozen=True, slots=True)
class Disclosure:
    """A run's or a project's disclosure: its phases and what was left out.

    Attributes:
        subject: The run's or the project's name.
        scope: "run" or "project".
        model: The model the runs trained ("" if not recorded).
        phases: One entry per phase with runs (a run: one).
        excluded: Runs not in any phase (inference), with why.
        tool: The tool and version that measured.
    """

    subject: str
    scope: str
    model: str
    phases: tuple[PhaseFigures, ...]
    excluded: tuple[str, ...]
    tool: str

    def phase(self, name: str) -> PhaseFigures | None:
        """The phase of this name, or None."""
        return next((p for p in self.phases if p.phase == name), None)


def combine_basis(bases: Sequence[Basis]) -> Basis:
    """A phase's basis from its runs': simulated taints all, then estimated, then measured."""
    for basis in (Basis.SIMULATED, Basis.ESTIMATED, Basis.MEASURED):
        if basis in bases:
            return basis
    return Basis.NONE


def basis_of(source: str) -> Basis:
    """The basis of an energy source label ("counter+estimated" is estimated in part: estimated)."""
    parts = {p for p in source.split("+") if p}
    if not parts or parts <= {"none"}:
        return Basis.NONE
    if "simulated" in parts:
        return Basis.SIMULATED
    if parts & {"estimated", "extrapolated", "published"}:
        return Basis.ESTIMATED
    return Basis.MEASURED
