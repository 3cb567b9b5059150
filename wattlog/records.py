"""The vocabulary every layer shares: device kinds, figure sources, and the rows the ledger stores.

Nothing here imports beyond the standard library, so any layer may import it without cost.
"""

from __future__ import annotations

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
class EnergyInterval:
    """Energy of one device over one flush interval: the row the ledger stores.

    Times are Unix seconds (wall clock), so rows from many nodes line up.
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
