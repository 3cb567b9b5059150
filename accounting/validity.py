"""Whether a run's measurement is fit to publish: a gate that fails closed, with its reasons.

A figure with a band and a source can still come from a run whose measurement is
not fit to publish: a device lost mid-run, long stretches unmeasured, a simulated
device, a run not finished. InferenceX's `power_valid` flag (SemiAnalysis PR #2323)
fails closed the same way. What this gate checks, from what the ledger holds:

- the run finished (a running or failed run's figures are "so far");
- every device was present for the whole run: no device lost;
- gaps stay under a limit: unmeasured device-seconds over measured device-seconds
  of the run (`ValidityLimits.max_gap_fraction`);
- nothing was simulated: a simulated device is never a measurement.

Not (yet) checked here: counters against power x time at start-up, the measurement
window against the run's edges, the intensity's hours covered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wattlog.accounting.gaps import GapReason, GapSummary
from wattlog.accounting.ledger.models import Status
from wattlog.accounting.ledger.views import EnergyTotal, RunInfo
from wattlog.errors import ConfigError
from wattlog.records import Source


@dataclass
class ValidityLimits:
    """The limits a valid run stays within."""

    max_gap_fraction: float = 0.01
    """Most unmeasured device-seconds allowed, as a share of the run's device-seconds (1 %)."""

    def __post_init__(self) -> None:
        if not 0 <= self.max_gap_fraction < 1:
            raise ConfigError(f"max_gap_fraction must be in [0, 1), got {self.max_gap_fraction}")


@dataclass(frozen=True, slots=True)
class Validity:
    """A run's verdict: valid when no reason speaks against it.

    Attributes:
        reasons: Why the run is not valid, one line each (empty: valid).
    """

    reasons: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        """Whether the run's measurement is fit to publish."""
        return not self.reasons

    def note(self) -> str:
        """The table's line: "valid" or "NOT VALID: reason; reason"."""
        return "measurement valid" if self.valid else f"NOT VALID: {'; '.join(self.reasons)}"


def run_validity(
    run: RunInfo,
    totals: Sequence[EnergyTotal],
    gaps: GapSummary,
    limits: ValidityLimits | None = None,
) -> Validity:
    """The gate's verdict on one run (see the module docstring for what it checks).

    Args:
        run: The run (its status, start and end).
        totals: Its per-device energy totals.
        gaps: Its gaps.
        limits: The limits (default ValidityLimits()).
    """
    limit = (limits or ValidityLimits()).max_gap_fraction
    reasons = []
    if run.status != Status.FINISHED:
        reasons.append(f"run {run.status}, not finished")
    if not totals:
        reasons.append("no energy recorded")
    simulated = sorted({t.device for t in totals if t.source == Source.SIMULATED})
    if simulated:
        reasons.append(f"{len(simulated)} simulated device(s): not a measurement")
    lost = sorted({g.device for g in gaps.gaps if g.reason is GapReason.DEVICE_LOST})
    if lost:
        reasons.append(f"device(s) lost during the run: {', '.join(lost)}")
    devices = len({(t.host, t.device) for t in totals})
    span_s = (run.end_s - run.start_s) if run.end_s is not None else None
    if span_s and devices:
        share = gaps.seconds / (span_s * devices)
        if share > limit:
            reasons.append(
                f"gaps {gaps.seconds:.1f} device-s = {share:.1%} of the run's device-seconds"
                f" (limit {limit:.1%})"
            )
    return Validity(tuple(reasons))
