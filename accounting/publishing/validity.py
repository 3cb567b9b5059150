"""Whether a run's measurement is fit to publish: a gate that fails closed, with its reasons.

A figure with a band and a source can still come from a run whose measurement is
not fit to publish: a device lost mid-run, long stretches unmeasured, a simulated
device, a run not finished. InferenceX's `power_valid` flag (SemiAnalysis PR #2323)
fails closed the same way. What this gate checks, from what the ledger holds:

- the run finished (a running or failed run's figures are "so far");
- nothing was simulated: a simulated device is never a measurement;
- every device was present for the whole run: none lost, and each one's rows reach
  from the run's start to its end (`ValidityLimits.max_edge_s` allowed at each end:
  the agent starts after the run is registered and stops before it is closed);
- gaps stay under a limit: unmeasured device-seconds over the run's device-seconds
  (`ValidityLimits.max_gap_fraction`);
- every energy counter was checked at start-up against power x time (a
  `counter_check` event per device: Zeus's 0.1-10x); a counter that was not checked,
  or failed and still counts, is not trusted; one the agent swapped for power x time
  (`swapped` in its event) publishes that figure: the run stays valid and the verdict notes it;
- the measurement window lies inside the run's start and end to within one sensor
  update (`ValidityLimits.sensor_update_s`): a loose window moved a published power
  from 720 W to 440 W (InferenceX PR #2323);
- an hourly intensity covers every hour the run used energy in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wattlog.accounting.carbon.intensity.hours import iso_hour
from wattlog.accounting.ledger.models import Status
from wattlog.accounting.ledger.views import EnergyTotal, EventInfo, RunInfo
from wattlog.accounting.publishing.gaps import GapSummary
from wattlog.errors import ConfigError
from wattlog.events import EventKind
from wattlog.gap_reasons import GapReason
from wattlog.numbers import check_number
from wattlog.records import Source
from wattlog.telemetry.sensors.base import COUNTER_CHECK

Device = tuple[str, str]
"""(host, device)."""


@dataclass
class ValidityLimits:
    """The limits a valid run stays within."""

    max_gap_fraction: float = 0.01
    """Most unmeasured device-seconds allowed, as a share of the run's device-seconds (1 %)."""
    max_edge_s: float = 30.0
    """Most seconds a device may go unmeasured at the run's start or end (agent start-up and close)."""
    sensor_update_s: float = 1.0
    """One sensor update: how far rows may reach before the run's start or past its end (NVML's
    averaged power covers 1 s)."""

    def __post_init__(self) -> None:
        if not 0 <= self.max_gap_fraction < 1:
            raise ConfigError(f"max_gap_fraction must be in [0, 1), got {self.max_gap_fraction}")
        check_number("max_edge_s", self.max_edge_s, low=0, high=86400, hint="the default is 30")
        check_number("sensor_update_s", self.sensor_update_s, low=0, high=3600, hint="the default is 1")


@dataclass(frozen=True, slots=True)
class RunEvidence:
    """What the gate reads of a run.

    Attributes:
        totals: Its per-device energy totals.
        gaps: Its gaps.
        spans: (host, device) -> the first start and last end of its rows (empty: not read).
        events: Its events (the `counter_check` ones are read).
        missing_hours: Hour starts (Unix s) with energy that the hourly intensity lacks.
    """

    totals: Sequence[EnergyTotal]
    gaps: GapSummary
    spans: Mapping[Device, tuple[float, float]] = field(default_factory=dict)
    events: Sequence[EventInfo] = ()
    missing_hours: Sequence[int] = ()


@dataclass(frozen=True, slots=True)
class Validity:
    """A run's verdict: valid when no reason speaks against it.

    Attributes:
        reasons: Why the run is not valid, one line each (empty: valid).
        notes: What the verdict says beside them that does not count against the run (a counter
            swapped for power x time at start-up).
    """

    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        """Whether the run's measurement is fit to publish."""
        return not self.reasons

    def note(self) -> str:
        """The table's line: "valid" or "NOT VALID: reason; reason", then its notes."""
        verdict = "measurement valid" if self.valid else f"NOT VALID: {'; '.join(self.reasons)}"
        return "; ".join((verdict, *self.notes))


def counter_check_payload(
    host: str, device: str, counter_j: float, power_j: float, span_s: float, *, swapped: bool = False
) -> dict[str, Any]:
    """The payload of a `counter_check` event: a counter's increase beside power x time at start-up,
    and whether the agent swapped the counter for power x time (it failed the check)."""
    return {
        "host": host, "device": device, "counter_j": counter_j, "power_j": power_j, "span_s": span_s,
        "swapped": swapped,
    }  # fmt: skip


def run_validity(run: RunInfo, evidence: RunEvidence, limits: ValidityLimits | None = None) -> Validity:
    """The gate's verdict on one run (see the module docstring for what it checks).

    Args:
        run: The run (its status, start and end).
        evidence: What was read of it.
        limits: The limits (default ValidityLimits()).
    """
    limits = limits or ValidityLimits()
    totals = evidence.totals
    reasons = []
    if run.status != Status.FINISHED:
        reasons.append(f"run {run.status}, not finished")
    if not totals:
        reasons.append("no energy recorded")
    simulated = sorted({t.device for t in totals if t.source == Source.SIMULATED})
    if simulated:
        reasons.append(f"{len(simulated)} simulated device(s): not a measurement")
    lost = [(g.host, g.device) for g in evidence.gaps.gaps if g.reason is GapReason.DEVICE_LOST]
    if lost:
        reasons.append(f"device(s) lost during the run: {_listed(lost)}")
    reasons += _gap_share(run, evidence, limits)
    reasons += _edges(run, evidence.spans, limits)
    reasons += _counters(totals, evidence.events)
    if evidence.missing_hours:
        hours = evidence.missing_hours
        reasons.append(
            f"intensity missing for {len(hours)} hour(s) with energy (first: {iso_hour(int(hours[0]))})"
        )
    return Validity(tuple(reasons), tuple(_swaps(evidence.events)))


def _gap_share(run: RunInfo, evidence: RunEvidence, limits: ValidityLimits) -> list[str]:
    devices = len({(t.host, t.device) for t in evidence.totals})
    span_s = (run.end_s - run.start_s) if run.end_s is not None else None
    if not span_s or not devices:
        return []
    gaps = evidence.gaps
    share = gaps.seconds / (span_s * devices)
    if share <= limits.max_gap_fraction:
        return []
    return [
        f"gaps {gaps.seconds:.1f} device-s = {share:.1%} of the run's device-seconds"
        f" (limit {limits.max_gap_fraction:.1%})"
    ]


def _edges(run: RunInfo, spans: Mapping[Device, tuple[float, float]], limits: ValidityLimits) -> list[str]:
    """Rows outside the run by more than one sensor update; devices missing the run's start or end."""
    if not spans:
        return []
    first = min(start for start, _ in spans.values())
    last = max(end for _, end in spans.values())
    update = limits.sensor_update_s
    reasons = []
    early, late = run.start_s - first, (last - run.end_s) if run.end_s is not None else 0.0
    if early > update or late > update:
        reasons.append(
            f"measurement window reaches {max(early, 0.0):.1f} s before the run's start and "
            f"{max(late, 0.0):.1f} s past its end (more than one sensor update, {update:g} s)"
        )
    end_s = run.end_s if run.end_s is not None else last
    short = sorted(
        f"{device} ({start - run.start_s:+.1f} s to {end - end_s:+.1f} s)"
        for (_, device), (start, end) in spans.items()
        if start - run.start_s > limits.max_edge_s or end_s - end > limits.max_edge_s
    )
    if short:
        reasons.append(
            f"device(s) not measured for the whole run (limit {limits.max_edge_s:g} s at each end): "
            + ", ".join(short)
        )
    return reasons


def _counters(totals: Sequence[EnergyTotal], events: Sequence[EventInfo]) -> list[str]:
    """Each counter device's start-up check: missing, or outside 0.1-10x of power x time."""
    checks = {
        (str(e.payload.get("host", "")), str(e.payload.get("device", ""))): e.payload
        for e in events
        if e.kind == EventKind.COUNTER_CHECK
    }
    low, high = COUNTER_CHECK
    unchecked, failed = [], []
    for device in sorted({(t.host, t.device) for t in totals if t.source == Source.COUNTER}):
        check = checks.get(device)
        if check is None:
            unchecked.append(device)
            continue
        counter_j, power_j = float(check["counter_j"]), float(check["power_j"])
        if power_j > 0 and not low * power_j <= counter_j <= high * power_j:
            failed.append(f"{device[1]} ({counter_j:.4g} J vs {power_j:.4g} J from power x time)")
    reasons = []
    if unchecked:
        reasons.append(
            f"energy counter(s) not checked at start-up against power x time: {_listed(unchecked)}"
        )
    if failed:
        reasons.append(
            f"energy counter(s) outside {low:g}-{high:g}x of power x time at start-up, not trusted but "
            f"still counted: {', '.join(failed)}"
        )
    return reasons


def _swaps(events: Sequence[EventInfo]) -> list[str]:
    """The counters the agent swapped for power x time at start-up: noted, not held against the run."""
    swapped = [
        (str(e.payload.get("host", "")), str(e.payload.get("device", "")))
        for e in events
        if e.kind == EventKind.COUNTER_CHECK and e.payload.get("swapped") is True
    ]
    if not swapped:
        return []
    low, high = COUNTER_CHECK
    return [
        f"energy counter(s) outside {low:g}-{high:g}x of power x time at start-up swapped for power x time "
        f"(figure from power readings, sampled): {_listed(swapped)}"
    ]


LISTED = 5
"""Devices a reason names before "and N more": a 1,024-GPU run's reason stays one readable line."""


def _listed(devices: Sequence[Device]) -> str:
    """Devices by name (host/device where they span hosts), the first few, then how many more."""
    unique = sorted(set(devices))
    several_hosts = len({host for host, _ in unique}) > 1
    names = [f"{host}/{device}" if several_hosts else device for host, device in unique]
    more = len(names) - LISTED
    return ", ".join(names[:LISTED]) + (f" and {more} more" if more > 0 else "")
