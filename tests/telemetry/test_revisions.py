"""Rows taken before the agent learned something follow it through recorded revisions, never rewritten."""

from __future__ import annotations

import pytest

from bench.accuracy import Result, cases, measure
from wattlog.records import BandRevision, EnergyInterval, Kind, Source, band_of_sum
from wattlog.telemetry.revisions import Revisions
from wattlog.telemetry.uncertainty import Band as BandParts
from wattlog.telemetry.uncertainty import BandInputs


def _run(name: str, counter: str) -> Result:
    [case] = [c for c in cases(90.0, 0) if c.name == name and c.model.counter_integrates == counter]
    return measure(case, 90.0)


def _apart(r: Result) -> float:
    energy_j = r.estimates_j["counter, 25 ms"]
    return max(abs(r.ledger_low_j - r.low_j), abs(r.ledger_high_j - r.high_j)) / energy_j


@pytest.mark.parametrize(
    ("name", "counter"), [("locked: 100 ms steps", "true"), ("exact 1300 ms steps", "observed")]
)
def test_the_tables_band_is_the_agents_once_earlier_rows_are_revised(name: str, counter: str) -> None:
    r = _run(name, counter)
    # rows flushed before the evidence came keep their wide band as stored (-49.7 % .. +24.4 %
    # against the agent's -3.7 % .. +14.4 % on the lock): the table summed only those
    assert max(abs(r.stored_low_j - r.low_j), abs(r.stored_high_j - r.high_j)) > 0.01 * r.true_j
    assert r.revisions >= 1
    assert _apart(r) <= 0.001  # with their revisions: the agent's band, to 0.1 % of the energy


def test_a_revision_says_why_and_the_rows_stay_as_stored() -> None:
    revisions = Revisions("h")
    row = EnergyInterval.of("h", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 10.0, 1000.0, 500.0, 1200.0)
    before = (False, None, False)
    revisions.written(row, before)
    trusted = BandInputs(1000.0, 1000.0, True, 10.0, 0.0, 700.0, counter_true=True)
    revisions.revise("gpu0", trusted, BandParts(940.0, 1105.0))
    [revision] = revisions.take()
    assert isinstance(revision, BandRevision)
    assert "counter was shown to integrate true power" in revision.reason
    assert (revision.start_s, revision.end_s) == (0.0, 10.0)
    assert band_of_sum([row]) == (500.0, 1200.0)  # the stored row is untouched
    assert band_of_sum([row], [revision]) == pytest.approx((940.0, 1105.0))
    revisions.revise("gpu0", trusted, BandParts(940.0, 1105.0))
    assert revisions.take() == []  # nothing new learned: no revision
