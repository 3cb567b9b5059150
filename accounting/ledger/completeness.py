"""Whether a measured run is all in the ledger, and why not: the one verdict every ending reads.

`wattlog run`, `wattlog node`, `wattlog agent`, the Tracker and the framework callbacks,
the SLURM hooks and `wattlog replay` each decided this in their own words before (four
places, four wordings, and a spooled run end or band revisions left behind counted in
some and not in others). Now each builds a :class:`Completeness` from what its recording
holds (:meth:`wattlog.accounting.fleet.recording.Recording.completeness`) and prints its line and
returns its exit code::

    done = recording.completeness()
    if not done.complete:
        print(done.line("wattlog node", run))
    return done.exit_code(command_code)
"""

from __future__ import annotations

from dataclasses import dataclass

from wattlog.telemetry.sinks import INCOMPLETE_EXIT

__all__ = ["Completeness", "INCOMPLETE_EXIT"]


@dataclass(frozen=True, slots=True)
class Completeness:
    """What of a run did not reach the ledger when its recording closed.

    Attributes:
        rows: Energy rows not in the ledger: kept for retry, spooled for `wattlog replay`, or lost.
        ends: The run's start or end lines in the spool (its status is not final until replayed).
        events: The run's events in the spool (counter checks, stops: the validity gate's evidence).
        revisions: Band revisions in the spool (the band is not final until replayed).
        other: More causes, each one line (e.g. "the ledger was replaced during the run").
        ledger: Whether the run records into a ledger (False: `wattlog agent` into a file or nowhere).
    """

    rows: int = 0
    ends: int = 0
    events: int = 0
    revisions: int = 0
    other: tuple[str, ...] = ()
    ledger: bool = True

    @property
    def complete(self) -> bool:
        """Whether everything measured is in the ledger and nothing waits anywhere.

        >>> Completeness().complete, Completeness(revisions=2).complete
        (True, False)
        """
        return not (self.rows or self.ends or self.events or self.revisions or self.other)

    @property
    def spooled_lines(self) -> int:
        """The run's start or end, events and band revisions in the spool (every row may be stored)."""
        return self.ends + self.events + self.revisions

    def reasons(self) -> list[str]:
        """One phrase per cause, energy rows first ([] when complete).

        >>> said = Completeness(rows=3, ends=1, revisions=2).reasons()
        >>> said[0]
        '3 energy rows are not in the ledger (spooled for `wattlog replay`, or lost)'
        >>> said[1].split(":")[0]
        'its start or end and 2 band revisions waiting in the spool for `wattlog replay`'
        """
        said = []
        if self.rows and not self.ledger:
            said.append(f"{self.rows} energy rows could not be written by its sinks")
        elif self.rows:
            said.append(
                f"{self.rows} energy rows are not in the ledger (spooled for `wattlog replay`, or lost)"
            )
        spooled = _spooled(self.ends, self.events, self.revisions)
        if spooled:
            said.append(
                f"{spooled} waiting in the spool for `wattlog replay`: until then its status, validity "
                "and band are not final"
            )
        return said + list(self.other)

    def why(self) -> str:
        """The reasons in one sentence ("" when complete)."""
        return "; ".join(self.reasons())

    def line(self, who: str, run: str | int) -> str:
        """The one line a command prints when the run is incomplete (stderr or the hook's log)."""
        return f"{who}: run {run} is incomplete: {self.why()}" if run else f"{who}: incomplete: {self.why()}"

    def exit_code(self, code: int) -> int:
        """`code`, or INCOMPLETE_EXIT (75, EX_TEMPFAIL) when it is 0 and the run is incomplete.

        A command that failed or was stopped keeps its own code: the line says what is missing.

        >>> spooled = Completeness(ends=1)
        >>> Completeness().exit_code(0), spooled.exit_code(0), spooled.exit_code(9)
        (0, 75, 9)
        """
        return code if code or self.complete else INCOMPLETE_EXIT

    def with_other(self, *causes: str) -> Completeness:
        """A copy with more causes (each one line)."""
        return Completeness(
            self.rows, self.ends, self.events, self.revisions, (*self.other, *causes), self.ledger
        )


def _spooled(ends: int, events: int, revisions: int) -> str:
    """ "its end, 2 events and 3 band revisions" ("" for none)."""
    parts = []
    if ends:
        parts.append("its start or end" if ends == 1 else f"{ends} lines of its start and end")
    if events:
        parts.append(f"{events} event{'s' if events != 1 else ''}")
    if revisions:
        parts.append(f"{revisions} band revision{'s' if revisions != 1 else ''}")
    if len(parts) > 1:
        return ", ".join(parts[:-1]) + " and " + parts[-1]
    return "".join(parts)
