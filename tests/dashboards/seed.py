"""A seeded ledger for the report's tests: one two-day run at Jupiter, with its events.

16 simulated GPUs around 650 W and 2 CPUs at 300 W for 48 hourly rows, a health
check, a restart with lost work, a loss spike and an alert: every part of the
page has something to show, and the expected figures are simple to recompute.
"""

from __future__ import annotations

import math

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Kind, Source

RUN = "olmo-mini"
START_S = 1_790_000_000.0  # the FakeClock's wall time at the run's start
HOURS = 48


def seed_ledger(url: str) -> Ledger:
    """Create the ledger at `url` with the run; returns it."""
    clock = FakeClock(wall_offset_s=START_S)
    ledger = Ledger(make_engine(url), clock=clock)
    ledger.start_run(RUN, RunSpec(model="OLMo mini", site="jupiter", host="node1"))
    ledger.record_event(
        RUN,
        "health_check",
        time_s=START_S + 60,
        category="health_check",
        payload={"ok": True, "start_s": START_S, "end_s": START_S + 60},
    )
    for hour in range(HOURS):
        start, end = START_S + hour * 3600, START_S + (hour + 1) * 3600
        rows = [
            EnergyInterval.of(
                "node1",
                f"GPU-{i:02d}",
                Kind.GPU,
                Source.SIMULATED,
                start,
                end,
                e := (650 + 50 * math.sin(hour / 4 + i)) * 3600,
                0.95 * e,
                1.05 * e,
            )
            for i in range(16)
        ]
        rows += [
            EnergyInterval.of(
                "node1",
                f"cpu-{i}",
                Kind.CPU,
                Source.SIMULATED,
                start,
                end,
                300 * 3600.0,
                0.9 * 300 * 3600,
                1.1 * 300 * 3600,
            )
            for i in range(2)
        ]
        ledger.record_intervals(RUN, rows)
        attempt = 1 if hour < 20 else 2
        ledger.record_event(
            RUN,
            "progress",
            time_s=end,
            step=(hour + 1) * 100,
            category="productive",
            payload={"attempt": attempt, "attempt_start_s": START_S + (60 if attempt == 1 else 20 * 3600)},
        )
    ledger.record_event(
        RUN,
        "loss_spike",
        time_s=START_S + 12 * 3600,
        step=1200,
        category="instability",
        payload={"message": "loss 7.9 > 4.1 at step 1200"},
    )
    ledger.record_event(
        RUN, "restart", time_s=START_S + 20 * 3600, category="downtime", payload={"restarts": 1}
    )
    ledger.record_event(
        RUN,
        "lost_work",
        time_s=START_S + 20 * 3600,
        step=1800,
        category="lost_work",
        payload={"start_s": START_S + 18 * 3600, "end_s": START_S + 20 * 3600},
    )
    ledger.record_event(
        RUN,
        "alert",
        time_s=START_S + 30 * 3600,
        category="alert",
        payload={
            "alertname": "WattlogPowerAboveLimit",
            "status": "firing",
            "annotations": {"summary": "GPU-03 on node1 draws more than its power limit"},
        },
    )
    clock.advance(HOURS * 3600)
    ledger.end_run(RUN)
    return ledger
