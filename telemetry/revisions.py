"""Revisions of the band of rows already taken, when the evidence behind it changes.

A row's band depends on what the agent knew when it was taken: whether the
counter has been shown to integrate true power (counter and samples differing
beyond sampling error over a minute), whether a phase lock is suspected, how far
a repetition's aliasing is bounded. The agent's own band is recomputed with
everything it knows; a row already written is not. So at each take, for each
device whose evidence changed since its earlier rows, the band of the whole span
those rows cover is recomputed with the new evidence, and what it differs by
from what the rows (and earlier revisions) add up to is recorded as a
:class:`wattlog.records.BandRevision`, with its reason. The rows are never
rewritten: summed with their revisions they give the band the agent now gives.

The rows' sampling-error parts were each estimated from the variation of the
published power known when they were taken; summed in quadrature they drift
from the whole span's estimate as that variation is learned. Where the drift
exceeds `DRIFT_REL` of the span's energy (0.05 %, half the 0.1 % the table and
the agent may differ by) the rows are revised too, saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wattlog.records import BandRevision, EnergyInterval, band_terms, summed_band
from wattlog.telemetry.uncertainty import Band, BandInputs

Evidence = tuple[bool, float | None, bool]
"""What a band assumed: (phase lock suspected, a repetition's aliasing bound, counter trusted)."""
DRIFT_REL = 0.0005
"""Rows whose summed band drifted this far (of their energy) from their span's band are revised."""


def evidence_of(x: BandInputs) -> Evidence:
    """The evidence the band of `x` is built on."""
    return (x.phase_lock, x.alias_rel, x.counter_true)


def reason(old: Evidence, new: Evidence, whole: BandInputs) -> str:
    """What changed between two states of evidence (or, if nothing did, the sampling estimate), in words."""
    parts: list[str] = []
    if old == new:
        return (
            f"band revised: sampling error re-estimated over the whole span ({whole.publications} "
            f"publications, variation {whole.cv:.1%})"
        )
    if new[2] != old[2]:
        parts.append(
            "the counter was shown to integrate true power (it differs from the samples beyond "
            "sampling error over a minute): its figure carries no partial-observation term"
            if new[2]
            else "the counter is no longer trusted"
        )
    if new[0] != old[0]:
        parts.append("phase lock suspected" if new[0] else "phase lock ruled out")
    if new[1] != old[1]:
        parts.append(
            f"published power repeats: aliasing bounded by +-{new[1]:.1%} from the samples"
            if new[1] is not None
            else "published power no longer repeats"
        )
    return "band revised: " + "; ".join(parts)


@dataclass(slots=True)
class _Written:
    """What one device's rows taken so far add to BAND_TERMS, their span, the evidence they assume."""

    evidence: Evidence
    start_s: float
    end_s: float
    terms: list[float] = field(default_factory=lambda: [0.0] * 6)


class Revisions:
    """The band terms each device's rows added so far, and the revisions the evidence called for.

    Args:
        host: The host label of the revisions.
    """

    def __init__(self, host: str) -> None:
        self._host = host
        self._written: dict[str, _Written] = {}
        self._pending: list[BandRevision] = []

    def revise(self, device: str, whole: BandInputs, band: Band) -> None:
        """Revise `device`'s rows so far to `band`, their span's band on the evidence `whole` carries.

        Only when the evidence changed, or the rows' summed band drifted from it (DRIFT_REL).
        """
        written = self._written.get(device)
        evidence = evidence_of(whole)
        if written is None:
            return
        if written.evidence == evidence:
            low_j, high_j = summed_band(*written.terms)
            drift_j = max(abs(low_j - band.low_j), abs(high_j - band.high_j))
            if drift_j <= DRIFT_REL * abs(whole.energy_j):
                return
        new = (
            band.low_j,
            band.high_j,
            band.random_low_j,
            band.random_high_j,
            band.random_low_j**2,
            band.random_high_j**2,
        )
        terms = (
            new[0] - written.terms[0],
            new[1] - written.terms[1],
            new[2] - written.terms[2],
            new[3] - written.terms[3],
            new[4] - written.terms[4],
            new[5] - written.terms[5],
        )
        why = reason(written.evidence, evidence, whole)
        self._pending.append(BandRevision(self._host, device, written.start_s, written.end_s, why, terms))
        written.terms, written.evidence = list(new), evidence

    def written(self, row: EnergyInterval, evidence: Evidence) -> None:
        """Count `row`, taken on `evidence`, among its device's rows."""
        written = self._written.get(row.device)
        if written is None:
            written = self._written[row.device] = _Written(evidence, row.start_s, row.end_s)
        for i, term in enumerate(band_terms(row)):
            written.terms[i] += term
        written.end_s = row.end_s
        written.evidence = evidence

    def take(self) -> list[BandRevision]:
        """The revisions recorded since the last take."""
        out, self._pending = self._pending, []
        return out
