"""A suspected phase lock between a load and a sensor's publication grid, and the note it carries.

Found by telemetry.lockcheck (see telemetry.uncertainty for what a lock is); kept
here, on its own, so the band's module stays one job.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PhaseLock:
    """A suspected lock between the load and the sensor's publication grid.

    Attributes:
        load_period_s: The load's period where the samples reveal it (a repetition); None where
            only the counter does (a lock at one phase shows no period of its own).
        score: How strongly it shows (the repetition's score, or the counter disagreement).
        how: What showed it, in words.
        off_rel: How far the power readings may be off (the repetition's bound, or how far they
            differ from the counter); None: unknown.
    """

    load_period_s: float | None
    score: float
    how: str
    off_rel: float | None = None

    def note(self, publication_period_s: float = 0.1, sensor: str = "the driver") -> str:
        """The plain-language caveat a DeviceEnergy carries, naming what read the device (`sensor`).

        One figure for how far the readings may be off: the one the evidence gives.
        """
        load = "load" if self.load_period_s is None else f"load period ~{self.load_period_s * 1e3:.0f} ms"
        off = "tens of percent" if self.off_rel is None else f"up to {self.off_rel:.0%}"
        return (
            f"phase lock suspected ({self.how}): {load} locked to the sensor's "
            f"{publication_period_s * 1e3:.0f} ms publication period; {sensor} readings may be "
            f"off by {off}"
        )
