"""The vocabulary every layer shares: device kinds, figure sources, and the rows the ledger stores.

Nothing here imports beyond the standard library, so any layer may import it without cost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, TypeVar


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


def millijoules(joules: float) -> int:
    """Joules rounded to whole millijoules: rows between two running totals so rounded telescope to
    the last one (see `EnergyFigure.to_millijoules`)."""
    return round(joules * 1000)


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

    def to_millijoules(self, energy_mj: int | None = None) -> EnergyFigure:
        """This figure as an agent records it: whole millijoules (NVML's unit).

        Its energy is `energy_mj` (default: its own, rounded), which an integrator takes from its
        running total rounded at both ends, so a device's rows add up to that total to the
        millijoule; the band is rounded outward, so it holds all this one held and its energy; each
        random part is rounded down and kept inside its side (what it gives up adds linearly, so a
        sum's band only widens). Whole millijoules leave a row's joules a few bits where every digit
        of a double was random, which an audit bundle stores in ~2-3 bytes (accounting.publishing.audit.rows).
        A figure with a term that is not finite is returned as it is.
        """
        terms = (self.energy_j, self.low_j, self.high_j, self.random_low_j, self.random_high_j)
        if not all(math.isfinite(term) for term in terms):
            return self
        energy = millijoules(self.energy_j) if energy_mj is None else energy_mj
        low, high = min(math.floor(self.low_j * 1000), energy), max(math.ceil(self.high_j * 1000), energy)
        random_low = min(max(math.floor(self.random_low_j * 1000), 0), energy - low)
        random_high = min(max(math.floor(self.random_high_j * 1000), 0), high - energy)
        terms_mj = (energy, low, high, random_low, random_high)
        return EnergyFigure(self.kind, self.source, *(value / 1000 for value in terms_mj))

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
    """The joules of a record built on an EnergyFigure (its `figure`), read as attributes (`row.energy_j`)."""

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

    @property
    def random_low_j(self) -> float:
        """The part of the band's lower side that is sampling error, joules."""
        return self.figure.random_low_j

    @property
    def random_high_j(self) -> float:
        """The part of the band's upper side that is sampling error, joules."""
        return self.figure.random_high_j


# not slots=True: on Python 3.11 a slotted frozen subclass answers an assignment to an inherited
# property (`row.energy_j = ...`) with a TypeError from its own __setattr__, not FrozenInstanceError
@dataclass(frozen=True)
class EnergyInterval(FigureView):
    """Energy of one device between two times: a flush row the ledger stores, or a named window.

    Who (host, device) and when (Unix seconds, wall clock, so rows from many nodes line
    up) around an EnergyFigure, whose band is the interval's own: its random parts are
    independent from one interval to the next, so a sum of intervals adds them in
    quadrature (`summed_band`) while the rest adds up linearly.

    A window (`with agent.window("eval"):`) is an interval with a name: `window` is that
    name and `parent` the name of the window it is nested in ("" at the top); both are ""
    for a flush row. A window's band also carries the uncertainty of its two edges.
    """

    host: str
    device: str
    start_s: float
    end_s: float
    figure: EnergyFigure
    window: str = ""
    parent: str = ""

    @property
    def kind(self) -> Kind:
        """The device kind."""
        return self.figure.kind

    @property
    def source(self) -> Source:
        """Where the figure comes from."""
        return self.figure.source

    @classmethod
    def of(
        cls,
        host: str,
        device: str,
        kind: Kind,
        source: Source,
        start_s: float,
        end_s: float,
        energy_j: float,
        low_j: float,
        high_j: float,
        random_low_j: float = 0.0,
        random_high_j: float = 0.0,
    ) -> EnergyInterval:
        """A flush row from its flat fields (as the ledger's and the spool's rows hold them)."""
        figure = EnergyFigure(kind, source, energy_j, low_j, high_j, random_low_j, random_high_j)
        return cls(host, device, start_s, end_s, figure)

    def as_dict(self) -> dict[str, object]:
        """Flat fields for a JSON line or a table row, with the window's names if any (see `from_dict`)."""
        f = self.figure
        out: dict[str, object] = {
            "host": self.host, "device": self.device, "kind": str(f.kind), "source": str(f.source),
            "start_s": self.start_s, "end_s": self.end_s, "energy_j": f.energy_j, "low_j": f.low_j,
            "high_j": f.high_j, "random_low_j": f.random_low_j, "random_high_j": f.random_high_j,
        }  # fmt: skip
        if self.window:
            out |= {"name": self.window, "parent": self.parent}
        return out

    @classmethod
    def from_dict(cls, item: Mapping[str, Any]) -> EnergyInterval:
        """The interval `as_dict` wrote (a window when it names one).

        Raises:
            ValueError: An unknown kind or source.
            KeyError: A field is missing.
        """
        row = cls.of(
            str(item["host"]), str(item["device"]), Kind(item["kind"]), Source(item["source"]),
            float(item["start_s"]), float(item["end_s"]), float(item["energy_j"]),
            float(item["low_j"]), float(item["high_j"]),
            float(item.get("random_low_j", 0.0)), float(item.get("random_high_j", 0.0)),
        )  # fmt: skip
        name = str(item.get("name", ""))
        return replace(row, window=name, parent=str(item.get("parent", ""))) if name else row


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


def physical_band(energy_j: float, low_j: float, high_j: float) -> tuple[float, float]:
    """A band as a reader shows it: in [0, inf) and holding its energy (issue 38).

    A part's share of a revision goes by its energy, not its band, so a short window with a
    wide band can be handed more of a lowered low side than it has: energy is never negative,
    and the measured energy is always inside its own band.
    """
    return min(max(low_j, 0.0), max(energy_j, 0.0)), max(high_j, energy_j)


BAND_TERMS = ("low_j", "high_j", "random_low_j", "random_high_j", "random_low_sq", "random_high_sq")
"""What a sum of rows adds up beside the energy, in `summed_band`'s order (the ledger's columns)."""


def band_terms(row: EnergyInterval) -> tuple[float, float, float, float, float, float]:
    """What `row` adds to each of BAND_TERMS."""
    return (
        row.low_j,
        row.high_j,
        row.figure.random_low_j,
        row.figure.random_high_j,
        row.figure.random_low_j**2,
        row.figure.random_high_j**2,
    )


def band_of_sum(
    rows: Iterable[EnergyInterval], revisions: Iterable[BandRevision] = ()
) -> tuple[float, float]:
    """The band (low_j, high_j) of the sum of `rows`' energy, as the ledger gives it (`summed_band`),
    with the `revisions` of their band added."""
    sums = [0.0] * len(BAND_TERMS)
    for terms in (band_terms(row) for row in rows):
        for i, term in enumerate(terms):
            sums[i] += term
    return summed_band(*revised_terms(sums, (r.terms for r in revisions)))  # each its whole span


Terms = tuple[float, float, float, float, float, float]
"""What a figure or a revision adds to each of BAND_TERMS."""
_K = TypeVar("_K")


def revision_shares(
    terms: Terms, energy_j: Mapping[_K, float], whole_j: float | None = None
) -> dict[_K, Terms]:
    """The one way a revision's `terms` reach what a reader sums: each part of its span gets a share.

    Every reader of a run's band (the totals, the hours, the windows, the bench) adds a
    revision through this: a part (a rollup row, an hour, a window) gets the share of its
    energy in the revised span, so the parts of a span add up to the revision exactly and
    the band of any sum of them is the agent's. With `whole_j` (the span's energy) the
    parts may be a piece of the span (a window); without, they are all of it.

    Args:
        terms: What the revision adds to each of BAND_TERMS.
        energy_j: The energy of each part inside the revised span, joules.
        whole_j: The span's energy (None: the parts' sum). A span with no energy is shared evenly.
    """
    total_j = sum(energy_j.values()) if whole_j is None else whole_j
    out: dict[_K, Terms] = {}
    for key, part_j in energy_j.items():
        share = part_j / total_j if total_j > 0 else 1.0 / len(energy_j)
        out[key] = (
            terms[0] * share,
            terms[1] * share,
            terms[2] * share,
            terms[3] * share,
            terms[4] * share,
            terms[5] * share,
        )
    return out


def revised_terms(sums: Sequence[float], shares: Iterable[Sequence[float]]) -> list[float]:
    """A part's BAND_TERMS sums with the revisions' shares of it added (`summed_band` gives its band).

    With `revision_shares`, the one path from stored rows and revisions to a band.
    """
    out = list(sums)
    for terms in shares:
        for i, term in enumerate(terms):
            out[i] += term
    return out


@dataclass(frozen=True, slots=True)
class BandRevision:
    """A change to the band of rows already written, from evidence the agent learned since.

    The rows stay as they were stored; the revision is recorded beside them, with its
    reason, and sums of the rows add it (`band_of_sum`, the ledger's totals). Its terms
    are what it adds to each of BAND_TERMS, for the device's rows in [start_s, end_s]:
    after it, those rows sum to the band the agent now gives that span.

    Attributes:
        host: The host of the revised rows.
        device: Their device.
        start_s: Start of the revised span (Unix seconds): the device's first row.
        end_s: Its end: the end of the last row written before the evidence came.
        reason: What was learned, in words, with the numbers behind it.
        terms: What it adds to each of BAND_TERMS, joules (squares: joules squared).
    """

    host: str
    device: str
    start_s: float
    end_s: float
    reason: str
    terms: tuple[float, float, float, float, float, float]


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
