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

from wattlog.accounting.it_energy import Energy, energy_label
from wattlog.accounting.ledger.reader import RunReader
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.accounting.units import HOUR_S
from wattlog.records import Kind


def energy_from_devices(
    devices: Iterable[EnergyTotal], by_hour_j: dict[int, float] | None = None
) -> Energy | None:
    """Sum devices into one run's Energy (None when there is no energy at all).

    Args:
        devices: Per-device totals (ledger or Prometheus).
        by_hour_j: IT energy per hour start (Unix s), joules, when known.
    """
    rows = list(devices)
    if not rows:
        return None
    metered = {r.host for r in rows if r.kind == Kind.NODE}
    counted = [r for r in rows if (r.kind == Kind.NODE) == (r.host in metered)]
    gpu_j = sum(r.energy_j for r in rows if r.kind == Kind.GPU)
    apart = any(r.kind == Kind.GPU for r in rows) and any(r.kind != Kind.GPU for r in rows)
    label = energy_label(r.source for r in counted)  # names who read a counter, where not wattlog
    figures = tuple(r.figure for r in counted)
    plain = label == energy_label(f.source for f in figures)
    # on a metered host the meter less the GPUs is not CPU+DRAM (fans, PSU losses): those are summed as read
    parts = [r.energy_j for r in rows if r.kind in (Kind.CPU, Kind.DRAM)]
    host_j = sum(parts) if metered else None
    gpu = gpu_j if apart else None
    return Energy(figures, by_hour_j, gpu, "" if plain else label, host_j, not metered or bool(parts))


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
        for hour, joules in read.energy_j_by_hour(kinds, exclude).items():
            start_s = hour * HOUR_S
            hours[start_s] = hours.get(start_s, 0.0) + joules
    return energy_from_devices(totals, dict(sorted(hours.items())))
