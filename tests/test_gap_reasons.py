"""Gap reasons, one closed set (issue 39): each stored as "<code>: <detail>" and read back, old prose too."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattlog.clock import FakeClock
from wattlog.gap_reasons import GapReason
from wattlog.records import Kind, Source
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.types import DeviceInfo, Reading

# what ledgers written before the enum (18aee5b and earlier) hold, verbatim from their writers
OLD_PROSE = [
    ("lost: device GPU-1 is lost: GPU_IS_LOST", GapReason.DEVICE_LOST),
    ("counter may have wrapped more than once", GapReason.COUNTER_RESET),
    ("counter jumped 3.69e+12 J in 0.1 s: not energy", GapReason.COUNTER_RESET),
    ("counter reset (energy before the reset unknown)", GapReason.COUNTER_RESET),
    ("agent down: the run's lease expired with no flush (killed, or its node lost)", GapReason.AGENT_DOWN),
    ("spool full (bound 600 bytes): energy of this stretch lost, 3 rows, 30.0 J", GapReason.NOT_STORED),
    ("spool not writable (disk full): energy of this stretch lost, 3 rows, 30.0 J", GapReason.NOT_STORED),
    ("rejected as invalid by LedgerSink: energy above the band", GapReason.NOT_STORED),
    ("no readings for 0.200 s (> 0.100 s)", GapReason.READ_FAILED),
    ("SensorError: Redfish read failed (Timeout)", GapReason.READ_FAILED),
    ("read failed", GapReason.READ_FAILED),
    ("downtime between attempts", GapReason.DOWNTIME),
]


@settings(max_examples=60, deadline=None)
@given(reason=st.sampled_from(GapReason), detail=st.text(max_size=40))
def test_every_reason_round_trips_through_its_stored_text(reason: GapReason, detail: str) -> None:
    text = reason.recorded(detail)
    assert text.startswith(reason.value)
    assert GapReason.of(text) is reason


def test_each_reason_has_its_own_code_and_words() -> None:
    assert len({r.value for r in GapReason}) == len({r.words for r in GapReason}) == len(GapReason)
    assert GapReason.DEVICE_LOST.words == "device lost"
    assert GapReason.DOWNTIME.words == "downtime between attempts"
    assert GapReason.AGENT_DOWN.recorded("x") == "agent down: x"


@pytest.mark.parametrize(("text", "reason"), OLD_PROSE)
def test_an_old_ledgers_prose_reads(text: str, reason: GapReason) -> None:
    assert GapReason.of(text) is reason


@pytest.mark.parametrize("why", ["lost connection to the BMC", "Counter not available (DCGM)", "agent down?"])
def test_a_failed_read_is_a_failed_read_whatever_its_text_begins_with(why: str) -> None:
    # 18aee5b stored the failure's own text and read it by its first word: a BMC's "lost
    # connection" was a lost device, a "Counter ..." error a counter reset (neither widens the band)
    node = DeviceInfo("redfish:node", "node", Kind.NODE, Source.SAMPLED, has_counter=False)
    integ = Integrator([node], host="h", clock=FakeClock())
    for t in (0.0, 1.0):
        integ.add(Reading(node.uuid, t, power_w=500.0, power_t_s=t, next_read_s=t + 1.0))
    integ.record_failure(node.uuid, 2.0, why, False)
    integ.add(Reading(node.uuid, 2.5, power_w=500.0, power_t_s=2.5, next_read_s=3.5))
    [gap] = integ.take_intervals()[1]
    assert GapReason.of(gap.reason) is GapReason.READ_FAILED and why in gap.reason
