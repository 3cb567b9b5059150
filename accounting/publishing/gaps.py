"""A run's gaps, as tables and reports show them: count, seconds and reason, and how far they widen the band.

The ledger records a gap wherever a device was not measured (a lost GPU, a
counter reset, failed reads, an agent that went away, rows the spool had to
drop). The downtime between attempts of a restarted run is derived here from
its restart events: from the end of the last row before each restart to the
restart. Nothing is filled in; the band widens instead.

How the band widens: gaps the integrator saw (device lost, counter reset,
failed reads) are already inside each row's band, as [0, P_max] over the gap.
The others carry no energy row at all, so their upper bound is added here:
the device's mean power over the run times the gap (the run's mean power for
downtime between attempts, when the job was not running). That bound is an
estimate, and the table says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wattlog.accounting.ledger.reader import RunReader
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.publishing.render import TableRow
from wattlog.events import EventKind
from wattlog.gap_reasons import GapReason

IN_BAND = frozenset({GapReason.DEVICE_LOST, GapReason.COUNTER_RESET, GapReason.READ_FAILED})
"""Reasons whose uncertainty the integrator already put into the rows' band."""


@dataclass(frozen=True, slots=True)
class RunGap:
    """One gap of a run (Unix seconds)."""

    device: str
    host: str
    start_s: float
    end_s: float
    reason: GapReason
    detail: str

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.end_s - self.start_s


@dataclass(frozen=True, slots=True)
class GapSummary:
    """A run's gaps and how much they widen its energy band.

    Attributes:
        gaps: Every gap, in time order.
        widen_j: Joules added to the upper end of the band for gaps not already in it.
    """

    gaps: tuple[RunGap, ...]
    widen_j: float

    @property
    def count(self) -> int:
        """Number of gaps."""
        return len(self.gaps)

    @property
    def seconds(self) -> float:
        """Total seconds in gaps (device-seconds: two devices out for 1 s count 2 s)."""
        return sum(g.duration_s for g in self.gaps)

    def by_reason(self) -> dict[GapReason, tuple[int, float]]:
        """Reason -> (count, seconds)."""
        out: dict[GapReason, tuple[int, float]] = {}
        for gap in self.gaps:
            n, s = out.get(gap.reason, (0, 0.0))
            out[gap.reason] = (n + 1, s + gap.duration_s)
        return out

    def line(self) -> str:
        """One line for a table's footnote, e.g. "2 gaps, 12.0 s: device lost 1 (10.0 s), ..."."""
        if not self.gaps:
            return "no gaps"
        parts = ", ".join(f"{r.words} {n} ({s:.1f} s)" for r, (n, s) in self.by_reason().items())
        widened = f"; band widened by up to {self.widen_j:,.0f} J (estimate)" if self.widen_j else ""
        return f"{self.count} gap(s), {self.seconds:.1f} s: {parts}{widened}"


def run_gaps(ledger: Ledger, run: int | str) -> GapSummary:
    """The gaps of a run, recorded and derived (downtime between attempts), and the band widening."""
    with ledger.reading(run, "read a run's gaps") as read:
        return gaps_of(read)


def gaps_of(read: RunReader) -> GapSummary:
    """`run_gaps` inside an open read of the run."""
    gaps = [
        RunGap(g.device, g.host, g.start_s, g.end_s, GapReason.of(g.reason), g.reason) for g in read.gaps()
    ]
    # a node's restart (its payload names the host) has its own gap on that node, not job-wide downtime
    restarts = [e.time_s for e in read.events() if e.kind == EventKind.RESTART and "host" not in e.payload]
    if not restarts and all(g.reason in IN_BAND for g in gaps):
        return GapSummary(tuple(sorted(gaps, key=lambda g: (g.start_s, g.device))), 0.0)
    # summed by the database, only when needed: a month of a fleet is millions of rows, and
    # turning each into an object here cost a table 27 s (issue 27)
    if not any(g.reason is GapReason.DOWNTIME for g in gaps):
        gaps += _downtime(restarts, read)
    gaps.sort(key=lambda g: (g.start_s, g.device))
    devices = [g.device for g in gaps if g.reason not in IN_BAND and g.reason is not GapReason.DOWNTIME]
    return GapSummary(tuple(gaps), _widen_j(gaps, read.total_j(), read.device_power(devices), read.span()))


def with_gaps(row: TableRow, summary: GapSummary) -> TableRow:
    """The table row with its gaps in a footnote.

    Its band already holds them: the run's energy carries `widen_j` (it_energy.Energy.unmeasured_j),
    so the headline, Table 19, the CSV and `wattlog table` read one band (issue 38).
    """
    if not summary.gaps:
        return row
    return row.with_notes(f"gaps: {summary.line()}")


def _downtime(restarts: Sequence[float], read: RunReader) -> list[RunGap]:
    out = []
    for restart_s in restarts:
        last_s = read.last_end_before(restart_s)
        if last_s is not None and restart_s > last_s:
            out.append(RunGap("*", "", last_s, restart_s, GapReason.DOWNTIME, GapReason.DOWNTIME.words))
    return out


def _widen_j(
    gaps: Sequence[RunGap],
    total_j: float,
    power: Mapping[str, tuple[float, float]],
    span: tuple[float, float] | None,
) -> float:
    span_s = span[1] - span[0] if span is not None else 0.0
    run_w = total_j / span_s if span_s > 0 else 0.0
    widen = 0.0
    for gap in gaps:
        if gap.reason in IN_BAND:
            continue
        if gap.reason is GapReason.DOWNTIME:
            widen += run_w * gap.duration_s
        else:
            j, s = power.get(gap.device, (0.0, 0.0))
            widen += (j / s if s > 0 else 0.0) * gap.duration_s
    return widen
