"""Repetition and phase-lock analysis of one device, from a copy of its state taken under the lock.

The integrator copies what the analysis needs (`LockCheck.of`, holding its
lock), runs `LockCheck.analyse` outside the lock (a few ms over 256
publications), and folds the finding back in (`Finding.apply`, holding it
again). See telemetry.uncertainty for what a repetition and a lock are.
"""

from __future__ import annotations

from dataclasses import dataclass

from wattlog.records import Source
from wattlog.telemetry.devicestate import DeviceState
from wattlog.telemetry.scalecheck import scale_note
from wattlog.telemetry.stale import stale_note
from wattlog.telemetry.types import SensorProfile
from wattlog.telemetry.uncertainty import (
    BandModel,
    PhaseLock,
    Repetition,
    analyse_repetition,
    counter_disagreement,
)

_CHECK_EVERY_PUBLICATIONS = 100
MIN_COMPARE_S = 10.0  # counter vs sampled compared only after this much common time
_TRUST_COMPARE_S = 60.0  # span before a counter/samples difference proves a true-power counter


def due(d: DeviceState, band: BandModel) -> bool:
    """Whether `d` is partially observed and enough new publications or comparison came in."""
    return band.fraction_seen(d.info) < 1 and (
        d.pubs.pub_n - d.check.checked_at_pub >= _CHECK_EVERY_PUBLICATIONS
        or d.both_s() - d.check.checked_at_both_s >= MIN_COMPARE_S
    )


@dataclass(frozen=True, slots=True)
class Finding:
    """What one analysis found: the repetition, a lock, whether the counter integrates true power."""

    pub_n: int
    compared_s: float
    repetition: Repetition | None
    lock: PhaseLock | None
    disagrees: bool

    def apply(self, d: DeviceState) -> None:
        """Fold the finding into `d` (the caller holds the integrator's lock); locks are sticky."""
        check = d.check
        check.checked_at_pub, check.checked_at_both_s = self.pub_n, self.compared_s
        if self.repetition is not None and (
            check.repetition is None or self.repetition.alias_rel >= check.repetition.alias_rel
        ):
            check.repetition = self.repetition  # the widest bound seen stays
        check.counter_true = check.counter_true or self.disagrees
        check.lock = check.lock or self.lock


@dataclass(frozen=True, slots=True)
class LockCheck:
    """A copy of what the analysis of one device reads, so it runs outside the integrator's lock."""

    recent: tuple[tuple[float, float], ...]
    compared: tuple[float, float] | None
    cv: float
    pub_n: int
    period_s: float | None
    seen: Repetition | None
    spans: tuple[int, float, float] = (0, 0.0, float("inf"))  # DeviceState.span_evidence

    @classmethod
    def of(cls, d: DeviceState) -> LockCheck:
        """The copy, taken while the caller holds the lock (the span since the last one compared first)."""
        d.compare_span(MIN_COMPARE_S)
        return cls(
            tuple(d.pubs.recent),
            d.compare(),
            d.cv(),
            d.pubs.pub_n,
            d.publication_period_s(),
            d.check.repetition,
            d.span_evidence(MIN_COMPARE_S),
        )

    def analyse(self, band: BandModel, profile: SensorProfile) -> Finding:
        """Repetition and lock from the copy.

        A repetition whose phases cover the load (harmless) only bounds the band; a lock is
        flagged when that bound exceeds `BandModel.lock_rel`, or when the counter and the
        samples disagree beyond sampling error (then the counter is trusted).
        """
        period_s = self.period_s or profile.publication_period_s
        repetition = analyse_repetition(
            [t for t, _ in self.recent],
            [p for _, p in self.recent],
            publication_period_s=period_s,
            observed_fraction=profile.observed_fraction,
        )
        found: PhaseLock | None = None
        if repetition is not None and repetition.alias_rel > band.lock_rel:
            found = PhaseLock(
                repetition.load_period_s,
                repetition.score,
                f"published power repeats at {repetition.phases} phases of the load",
                repetition.alias_rel,
            )
        disagrees = False
        compared = self.compared
        if compared is not None and compared[1] >= MIN_COMPARE_S:
            # a disagreement within what a repetition seen so far may cause is no lock
            aliasing = max((r.alias_rel for r in (repetition, self.seen) if r is not None), default=0.0)
            expected = max(band.sampling_rel(self.cv, self.pub_n), aliasing, 0.02)
            # a counter summing only the observed windows equals the samples: one that
            # differs by more integrates true power, so aliasing does not touch its figure
            disagrees = compared[1] >= _TRUST_COMPARE_S and abs(compared[0]) > band.counter_evidence_rel
            rel = counter_disagreement(1.0, 1.0 + compared[0], expected)
            if rel is not None:
                # a window locked at one phase shows the load's level there, not its period
                found = found or PhaseLock(None, abs(rel), f"sampled {rel:+.0%} vs counter", abs(rel))
        spans, rms, edge_rel = self.spans
        # spans that part from the samples beyond what the grids' offset could cause: true power
        disagrees = disagrees or (
            spans * MIN_COMPARE_S >= _TRUST_COMPARE_S and rms > max(3 * edge_rel, band.counter_span_rel)
        )
        return Finding(self.pub_n, compared[1] if compared else 0.0, repetition, found, disagrees)


def _period_note(d: DeviceState, period_s: float) -> str:
    """How often the device's power changes, on whose times: the driver's, or the estimate's own."""
    if d.info.source is Source.ESTIMATED:  # no sensor, no driver: the estimate is remade on its own times
        return (
            f"estimate remade every {period_s * 1e3:.0f} ms (the estimate's own times); "
            f"{d.power.repeats} of {d.samples} reads repeated an estimate"
        )
    return (
        f"power published every {period_s * 1e3:.0f} ms (the driver's timestamps); "
        f"{d.power.repeats} of {d.samples} reads repeated a publication"
    )


def notes(d: DeviceState, profile: SensorProfile) -> tuple[str, ...]:
    """The plain-language caveats of `d`'s figure: lock or repetition, comparison, counter events, loss."""
    out: list[str] = []
    if d.check.lock is not None:
        lock_period_s = d.publication_period_s() or profile.publication_period_s
        out.append(d.check.lock.note(lock_period_s, profile.sensor))
    elif d.check.repetition is not None:
        out.append(d.check.repetition.note())
    compared = d.compare()
    if compared is not None:
        rel, span_s = compared
        out.append(f"counter vs sampled power over {span_s:.0f} s: sampled {rel:+.2%}")
    period_s = d.publication_period_s()
    if period_s is not None:
        out.append(_period_note(d, period_s))
    counter = d.counter
    if counter.resets:
        out.append(f"counter went backwards {counter.resets}x (reset): counted from the new value, never < 0")
    if counter.jumps:
        out.append(f"counter jumped forward {counter.jumps}x, more than the device could draw: a gap each")
    if (stale := stale_note(d)) is not None:
        out.append(stale)
    if (scale := scale_note(d)) is not None:
        out.append(scale)
    if counter.wraps:
        out.append(f"counter wrapped {counter.wraps}x at {d.info.counter_range_mj:g} mJ")
    if counter.bridged_s:
        out.append(f"{counter.bridged_s:.1f} s without readings bridged exactly by the counter")
    if d.swapped:
        out.append(d.swapped)
    if d.health.lost_at is not None:
        out.append(f"lost: {d.health.lost_reason}")
    return tuple(out)
