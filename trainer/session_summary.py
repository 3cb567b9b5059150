"""How a run session ended: its status (from an error or a command's outcome) and its summary line."""

from __future__ import annotations

import signal
from dataclasses import dataclass

from wattlog.accounting.it_energy import energy_label
from wattlog.accounting.ledger import Status
from wattlog.accounting.ledger.completeness import Completeness
from wattlog.accounting.units import sig3, unit_for
from wattlog.records import EnergyFigure
from wattlog.telemetry.supervise import Ending, Outcome, StopRequested

__all__ = ["SessionSummary", "status_for_error", "status_for_outcome"]


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """How a session ended and whether its energy is all in the ledger.

    Attributes:
        status: The run's final status.
        measured: The figure of each device this session's agent measured, cumulative
            (None without an agent; empty for a rank that joined another agent's node).
        recorded_j: Joules of those in the ledger (rows still in the spool or lost not counted).
        done: What of the run is not in the ledger (energy rows; its start or end, events and band
            revisions waiting in the spool for `wattlog replay`): the verdict every ending reads.
    """

    status: Status
    measured: tuple[EnergyFigure, ...] | None
    recorded_j: float
    done: Completeness = Completeness()

    @property
    def unwritten_rows(self) -> int:
        """Energy rows not in the ledger: kept for retry, spooled (`wattlog replay`) or lost."""
        return self.done.rows

    @property
    def spooled_lines(self) -> int:
        """The run's start or end, events and band revisions waiting in the spool."""
        return self.done.spooled_lines

    @property
    def measured_j(self) -> float | None:
        """Joules this session's agent integrated, all devices summed (None without an agent)."""
        return None if self.measured is None else sum(f.energy_j for f in self.measured)

    @property
    def low_j(self) -> float:
        """Lower end of the measured energy's band, joules (the devices' bands added linearly)."""
        return sum(f.low_j for f in self.measured or ())

    @property
    def high_j(self) -> float:
        """Upper end of the measured energy's band, joules."""
        return sum(f.high_j for f in self.measured or ())

    @property
    def source(self) -> str:
        """The measured energy's source label ("counter", "estimated+simulated"; "" with no device)."""
        return energy_label(f.source for f in self.measured) if self.measured else ""

    @property
    def complete(self) -> bool:
        """Whether every joule measured reached the ledger (to rounding) and nothing waits in the spool."""
        stored = self.done.complete
        if self.measured_j is None:
            return stored
        same = abs(self.measured_j - self.recorded_j) <= 1e-9 * max(1.0, abs(self.measured_j))
        return same and stored

    def line(self) -> str:
        """One line for the user: the energy measured and how much of it is in the ledger."""
        if self.measured_j is None:
            return self.recorded_part()
        unit, size = unit_for(self.measured_j, "energy")  # the run's one unit, as its Energy line's
        band = f"band {sig3(self.low_j / size)} - {sig3(self.high_j / size)} {unit}"
        return f"{self.recorded_part()}; source {self.source or 'none'}, {band}"

    def recorded_part(self) -> str:
        """The energy measured and how much of it is in the ledger (the first part of :meth:`line`)."""
        if self.measured_j is None:
            return "no agent in this process: the node's agent records the energy"
        if self.complete:
            verdict = "all recorded"
        elif not self.done.complete:
            verdict = f"INCOMPLETE: {self.done.why()}"
        else:
            verdict = "INCOMPLETE: the rest is not in the ledger"
        # in the unit the Energy line below uses, not "measured 402.292 J" then "Energy: 0.112 Wh"
        unit, size = unit_for(self.measured_j, "energy")
        measured, recorded = sig3(self.measured_j / size), sig3(self.recorded_j / size)
        return f"measured {measured} {unit}, {recorded} {unit} recorded in the ledger ({verdict})"


def status_for_error(error: BaseException | None) -> Status:
    """The status of a run whose body ended with `error` (None: it finished)."""
    if error is None:
        return Status.FINISHED
    if isinstance(error, StopRequested):
        return Status.PREEMPTED if error.signum is signal.SIGTERM else Status.KILLED
    if isinstance(error, KeyboardInterrupt):
        return Status.KILLED
    return Status.FAILED


def status_for_outcome(outcome: Outcome) -> Status:
    """The status of a run whose command ended with `outcome`."""
    if outcome.ending is Ending.STOPPED:
        return Status.PREEMPTED if outcome.preempted else Status.KILLED
    if outcome.ending is Ending.SIGNALLED:
        return Status.KILLED
    if outcome.ending is Ending.FINISHED:
        return Status.FINISHED
    return Status.FAILED
