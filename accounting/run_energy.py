"""A run's IT energy as the footprint needs it, from the ledger or from Prometheus.

The ledger holds per-device rows of kind gpu, cpu, dram or node. A `node`
device is a whole-node meter that already includes the node's GPUs, CPU and
DRAM, so on a host that has one, the node meter is the host's IT energy and
its components are shown apart, never added to it. On other hosts IT energy
is GPUs + CPU + DRAM. GPU energy alone misses a large share of a node's
draw, so tables show GPU and rest-of-node energy apart where both exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from wattlog.accounting.footprint import Energy, energy_label
from wattlog.accounting.ledger.reader import RunReader
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.accounting.ranges import Range
from wattlog.accounting.units import j_to_mwh
from wattlog.records import Kind

HOUR_S = 3600


def energy_from_devices(
    devices: Iterable[EnergyTotal], by_hour_mwh: dict[int, float] | None = None
) -> Energy | None:
    """Sum devices into one run's Energy (None when there is no energy at all).

    Args:
        devices: Per-device totals (ledger or Prometheus).
        by_hour_mwh: IT energy per hour start (Unix s), when known.
    """
    rows = list(devices)
    if not rows:
        return None
    metered = {r.host for r in rows if r.kind == Kind.NODE}
    counted = [r for r in rows if (r.kind == Kind.NODE) == (r.host in metered)]
    gpu_j = sum(r.energy_j for r in rows if r.kind == Kind.GPU)
    it_j = sum(r.energy_j for r in counted)
    has_gpu = any(r.kind == Kind.GPU for r in rows)
    has_rest = any(r.kind != Kind.GPU for r in rows)
    return Energy(
        it_mwh=j_to_mwh(it_j),
        source=energy_label(r.source for r in counted),
        band_mwh=Range(j_to_mwh(sum(r.low_j for r in counted)), j_to_mwh(sum(r.high_j for r in counted))),
        by_hour_mwh=by_hour_mwh,
        gpu_mwh=j_to_mwh(gpu_j) if has_gpu and has_rest else None,
        host_mwh=j_to_mwh(it_j - gpu_j) if has_gpu and has_rest else None,
    )


def ledger_energy(ledger: Ledger, run: int | str, *, by_hour: bool = True) -> Energy | None:
    """A run's IT energy from the ledger, read in one transaction.

    Args:
        ledger: The ledger.
        run: The run's id or name.
        by_hour: Also read its energy per hour (rows bucketed by their start hour), which an
            hourly intensity needs; a constant intensity doesn't, and this is the slow query.
    """
    with ledger.reading(run, "read a run's energy") as read:
        return read_energy(read, read.energy_totals(), by_hour=by_hour)


def read_energy(read: RunReader, totals: Sequence[EnergyTotal], *, by_hour: bool = True) -> Energy | None:
    """A run's IT energy from its device totals and, with `by_hour`, its hours, in an open read."""
    metered = sorted({t.host for t in totals if t.kind == Kind.NODE})
    if not by_hour:
        return energy_from_devices(totals)
    hours: dict[int, float] = {}
    # a host with a node meter counts its meter, the others their components
    parts: Sequence[tuple[list[str] | None, Sequence[str]]] = (
        [
            ([Kind.NODE.value], ()),
            ([Kind.GPU.value, Kind.CPU.value, Kind.DRAM.value], metered),
        ]
        if metered
        else [(None, ())]
    )
    for kinds, exclude in parts:
        for hour in read.energy_by_hour(kinds, exclude):
            assert hour.hour is not None  # hourly sums carry their hour
            start_s = hour.hour * HOUR_S
            hours[start_s] = hours.get(start_s, 0.0) + j_to_mwh(hour.energy_j)
    return energy_from_devices(totals, dict(sorted(hours.items())))
