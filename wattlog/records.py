"""The vocabulary every layer shares: device kinds, figure sources, and the rows the ledger stores.

Nothing here imports beyond the standard library, so any layer may import it without cost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What a device is; also the Prometheus `kind` label."""

    GPU = "gpu"
    CPU = "cpu"
    DRAM = "dram"
    NODE = "node"


class Source(StrEnum):
    """Where an energy figure comes from. Every figure shown carries one."""

    COUNTER = "counter"  # differences of a hardware energy counter
    SAMPLED = "sampled"  # integrated from power readings
    ESTIMATED = "estimated"  # a model (utilisation x TDP), no sensor at all
    SIMULATED = "simulated"  # the simulated device: never a measurement
    EXTRAPOLATED = "extrapolated"  # K of N nodes measured, their mean x N (the OLMo 2 paper's method)


@dataclass(frozen=True, slots=True)
class EnergyFigure:
    """Joules with their band, the band's random part, the device kind and the figure's source.

    The one value type for "an energy figure" in every layer: an interval, a window, a
    ledger total, a Prometheus increase and a run's summary are this plus who and when.
    [low_j, high_j] is the band; `random_low_j`/`random_high_j` are the parts of its two
    sides that are sampling error (independent between figures, so a sum adds them in
    quadrature); the rest of each side adds linearly. Conversions to kWh or MWh happen
    where a figure is printed, never here.
    """

    kind: Kind
    source: Source
    energy_j: float
    low_j: float
    high_j: float
    random_low_j: float = 0.0
    random_high_j: float = 0.0

    def __add__(self, other: EnergyFigure) -> EnergyFigure:
        """The sum of two figures of one kind and source, its band as the ledger sums rows.

        Quadrature is associative (sqrt(sqrt(a^2 + b^2)^2 + c^2) = sqrt(a^2 + b^2 + c^2)),
        so figures may be added in any grouping and give `summed_band`'s result.
        """
        if (self.kind, self.source) != (other.kind, other.source):
            raise ValueError(f"cannot add {other.kind}/{other.source} energy to {self.kind}/{self.source}")
        random_low = math.hypot(self.random_low_j, other.random_low_j)
        random_high = math.hypot(self.random_high_j, other.random_high_j)
        energy = self.energy_j + other.energy_j
        below = (self.energy_j - self.low_j - self.random_low_j) + (
            other.energy_j - other.low_j - other.random_low_j
        )
        above = (self.high_j - self.energy_j - self.random_high_j) + (
            other.high_j - other.energy_j - other.random_high_j
        )
        return EnergyFigure(
            self.kind, self.source, energy, energy - below - random_low, energy + above + random_high,
            random_low, random_high,
        )  # fmt: skip


class FigureView:
    """The joules of a record built on an EnergyFigure (its `figure`), read as attributes."""

    __slots__ = ()
    figure: EnergyFigure

    @property
    def energy_j(self) -> float:
        """Best estimate, joules."""
        return self.figure.energy_j

    @property
    def low_j(self) -> float:
        """Lower end of the uncertainty band, joules."""
        return self.figure.low_j

    @property
    def high_j(self) -> float:
        """Upper end of the uncertainty band, joules."""
        return self.figure.high_j


@dataclass(frozen=True, slots=True)
class EnergyInterval:
    """Energy of one device over one flush interval: the row the ledger stores.

    Times are Unix seconds (wall clock), so rows from many nodes line up.
    [low_j, high_j] is the interval's own band. `random_low_j` and `random_high_j`
    are the parts of its two sides that come from sampling error (partial
    observation of the power), which is independent from one interval to the
    next: a sum of intervals adds them in quadrature (`summed_band`), while the
    rest of the band (calibration, repetition, gaps) adds up linearly. 0: the
    whole band adds linearly (the widest, always safe).
    """

    host: str
    device: str
    kind: Kind
    source: Source
    start_s: float
    end_s: float
    energy_j: float
    low_j: float
    high_j: float
    random_low_j: float = 0.0
    random_high_j: float = 0.0

    @property
    def figure(self) -> EnergyFigure:
        """The interval's energy as a figure, without who and when."""
        return EnergyFigure(
            self.kind,
            self.source,
            self.energy_j,
            self.low_j,
            self.high_j,
            self.random_low_j,
            self.random_high_j,
        )


def summed_band(
    low_j: float,
    high_j: float,
    random_low_j: float,
    random_high_j: float,
    random_low_sq: float,
    random_high_sq: float,
) -> tuple[float, float]:
    """The band of a sum of intervals, from the sums of their bands and random parts (and squares).

    The random parts are independent errors, so the sum's is the root of the sum of their
    squares, not their sum: over an hour of 10 s intervals that is 19 times narrower. Each
    side only ever narrows by what the random parts put in, so with none it is the linear sum.
    """
    # max(0): a sum of squares that rounding took a hair below zero
    low = low_j + random_low_j - math.sqrt(max(random_low_sq, 0.0))
    high = high_j - random_high_j + math.sqrt(max(random_high_sq, 0.0))
    return low, high


BAND_TERMS = ("low_j", "high_j", "random_low_j", "random_high_j", "random_low_sq", "random_high_sq")
"""What a sum of rows adds up beside the energy, in `summed_band`'s order (the ledger's columns)."""


def band_terms(row: EnergyInterval) -> tuple[float, float, float, float, float, float]:
    """What `row` adds to each of BAND_TERMS."""
    return (
        row.low_j,
        row.high_j,
        row.random_low_j,
        row.random_high_j,
        row.random_low_j**2,
        row.random_high_j**2,
    )


def band_of_sum(rows: Iterable[EnergyInterval]) -> tuple[float, float]:
    """The band (low_j, high_j) of the sum of `rows`' energy, as the ledger gives it (`summed_band`)."""
    sums = [0.0] * len(BAND_TERMS)
    for row in rows:
        for i, term in enumerate(band_terms(row)):
            sums[i] += term
    return summed_band(*sums)


@dataclass(frozen=True, slots=True)
class Gap:
    """A stretch of time in which a device was not measured, in Unix seconds."""

    host: str
    device: str
    start_s: float
    end_s: float
    reason: str

    @property
    def duration_s(self) -> float:
        """Length of the gap in seconds."""
        return self.end_s - self.start_s


@dataclass(frozen=True, slots=True)
class WindowEnergy:
    """Energy of one device over one named window of a run (`with agent.window("eval"):`).

    Times are Unix seconds. `parent` is the name of the window it is nested in ("" at
    the top), so nested windows can be shown as a tree; the band carries the
    uncertainty of the two edges (each inside the last counter update, taken from the
    power readings) besides the device's own.
    """

    host: str
    device: str
    kind: Kind
    source: Source
    name: str
    parent: str
    start_s: float
    end_s: float
    energy_j: float
    low_j: float
    high_j: float
