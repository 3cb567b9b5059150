"""A run's IT energy as the footprint takes it: figures in joules, and one label for their sources.

The ledger, Prometheus and the extrapolation build an :class:`Energy`; the footprint
(:mod:`wattlog.accounting.publishing.footprint`) turns it into facility energy, CO2 and water.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wattlog.accounting.ranges import Range, check_at_least
from wattlog.accounting.units import j_to_mwh
from wattlog.errors import ConfigError
from wattlog.records import EnergyFigure, Source

PUBLISHED = "published"
"""Energy source label of figures taken from a publication, not measured by wattlog."""


def energy_label(sources: Iterable[Source | str]) -> str:
    """One label for energy from several sources, e.g. "counter+sampled".

    A label may name who read it in parentheses, e.g. "counter (dcgm-exporter)".

    Raises:
        ConfigError: An unknown label, or none at all.
    """
    allowed = {s.value for s in Source} | {PUBLISHED}
    labels = sorted({str(s) for s in sources})
    bad = [label for label in labels if label.split(" (", 1)[0] not in allowed]
    if bad or not labels:
        given = "+".join(bad) or "(none)"
        raise ConfigError(f"energy source label {given}: use {', '.join(sorted(allowed))}")
    return "+".join(labels)


@dataclass(frozen=True, slots=True)
class Energy:
    """A run's IT energy (what the sensors measured): the figures it adds up, in joules.

    The IT energy is the sum of `figures` (one per device, or per kind and source), its
    band their bands added linearly. `it_mwh` and `by_hour_mwh` are the footprint maths'
    view (the paper's formulas are in MWh): nothing here is stored in MWh.

    Attributes:
        figures: What the IT energy adds up, each with its kind, source and band.
        by_hour_j: IT energy per hour (hour start, Unix s -> J); needed with an hourly intensity.
        gpu_j: Energy of the GPUs alone, where measured apart from the rest of the node.
        label: The source label where it says more than the figures' sources (who read a
            counter, "extrapolated+simulated"); "" = the figures' sources joined with "+".
        host_j: CPU+DRAM energy where the IT energy holds more than GPUs, CPU and DRAM (a node
            meter's fans and PSU losses); None: the IT energy less the GPUs'.
        host_measured: False where no CPU or DRAM was measured apart though the GPUs were (a node
            meter beside GPUs only): the CPU+DRAM figure is missing, not the meter less the GPUs.
        unmeasured_j: Upper bound of the energy of gaps no figure's band holds (accounting.gaps'
            `widen_j`, an estimate), J: added to the band's high side, never to the energy.
    """

    figures: tuple[EnergyFigure, ...]
    by_hour_j: Mapping[int, float] | None = None
    gpu_j: float | None = None
    label: str = ""
    host_j: float | None = None
    host_measured: bool = True
    unmeasured_j: float = 0.0

    def __post_init__(self) -> None:
        check_at_least(self.it_j, 0.0, "IT energy", "energy cannot be negative")
        energy_label(self.source.split("+"))

    @property
    def it_j(self) -> float:
        """Best estimate of IT energy, joules."""
        return sum(f.energy_j for f in self.figures)

    @property
    def source(self) -> str:
        """Label: counter, sampled, estimated, simulated, extrapolated, or a "+" mix."""
        return self.label or energy_label(f.source for f in self.figures)

    @property
    def it_mwh(self) -> float:
        """IT energy, MWh (the footprint's formulas)."""
        return j_to_mwh(self.it_j)

    @property
    def band_j(self) -> Range | None:
        """The uncertainty band of it_j, joules; None when every figure is exact and no gap is open.

        The one band of a run: the headline, Table 19, the CSV and `wattlog table` all read it.
        """
        if not self.unmeasured_j and all(f.low_j == f.energy_j == f.high_j for f in self.figures):
            return None
        high_j = sum(f.high_j for f in self.figures) + self.unmeasured_j
        return Range(sum(f.low_j for f in self.figures), high_j)

    @property
    def by_hour_mwh(self) -> Mapping[int, float] | None:
        """IT energy per hour, MWh (the footprint's formulas)."""
        return None if self.by_hour_j is None else {h: j_to_mwh(j) for h, j in self.by_hour_j.items()}

    @property
    def host_split_j(self) -> float | None:
        """The rest of the node's energy (CPU, DRAM), joules, where the GPUs' was measured apart."""
        if self.gpu_j is None or not self.host_measured:
            return None
        return self.it_j - self.gpu_j if self.host_j is None else self.host_j
