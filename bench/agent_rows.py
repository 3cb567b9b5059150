"""What one node's agent flushes every 10 s, as the benches write it: 8 GPUs, CPU, DRAM and node meter.

Stands in for: a training node under `wattlog node` (issue 41): 8 GPUs read from their energy
counters, CPU and DRAM from RAPL (sampled), and the node's BMC meter (sampled), each a 10 s row.
Power varies as training's does, between about 15 % (checkpoint stalls) and 85 % of peak, per
device and per flush, so rows differ as real ones do (a constant 700 W compresses and caches
better than a fleet's rows); the band is the sensor's +-5 %.
"""

from __future__ import annotations

import math
import zlib

from wattlog.accounting.ledger import Ledger
from wattlog.accounting.ledger.partitions import create_days, is_partitioned
from wattlog.records import EnergyInterval, Kind, Source

FLUSH_S = 10.0
PEAK_W = {"gpu": 700.0, "cpu": 350.0, "dram": 60.0}
NODE_OVERHEAD_W = 300.0  # fans, NICs, PSU losses: what the node meter adds to its devices
GPUS = 8
ROWS_PER_FLUSH = GPUS + 3


def load(host: str, device: int, index: int) -> float:
    """Fraction of peak power (0.15-0.85) of one device in one flush: steps, dips and stalls."""
    phase = zlib.crc32(host.encode()) % 1000 / 100 + device * 0.7
    wave = 0.5 + 0.35 * math.sin(index / 6.0 + phase)
    stall = 0.2 if index % 180 == 0 else 1.0  # a checkpoint every 30 min: the fleet dips together
    return max(0.15, min(0.85, wave * stall))


def agent_flush(host: str, index: int, t0_s: float) -> list[EnergyInterval]:
    """One flush of one node: its rows of [t0 + 10 index, t0 + 10 (index + 1))."""
    start = t0_s + index * FLUSH_S
    end = start + FLUSH_S
    rows, watts = [], 0.0
    for device, (name, kind, source) in enumerate(
        [(f"GPU-{host}-{g}", Kind.GPU, Source.COUNTER) for g in range(GPUS)]
        + [("cpu", Kind.CPU, Source.SAMPLED), ("dram", Kind.DRAM, Source.SAMPLED)]
    ):
        power_w = PEAK_W[str(kind)] * load(host, device, index)
        watts += power_w
        rows.append(_row(host, name, kind, source, start, end, power_w))
    rows.append(_row(host, "node", Kind.NODE, Source.SAMPLED, start, end, watts + NODE_OVERHEAD_W))
    return rows


def _row(
    host: str, name: str, kind: Kind, source: Source, start: float, end: float, power_w: float
) -> EnergyInterval:
    joules = round(power_w * (end - start), 3)
    return EnergyInterval.of(host, name, kind, source, start, end, joules, joules * 0.95, joules * 1.05)


def make_days(ledger: Ledger, first_hour: int, last_hour: int) -> None:
    """Create the day partitions of hours first..last before a bench's bulk insert (PostgreSQL), so
    its rows land in their days as the agents' do, never in DEFAULT (SQLite: nothing to do)."""
    with ledger.transaction("make the bench's day partitions") as session:
        if is_partitioned(session.connection()):
            create_days(session, range(first_hour // 24, last_hour // 24 + 1))
