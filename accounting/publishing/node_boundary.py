"""The node boundary beside the sum of the devices it holds: what the GPUs, CPUs and DRAM leave out.

On a host with a node meter (its BMC over Redfish or IPMI DCMI, kind `node`) the
meter is the host's IT energy (run_energy); its GPUs, CPU and DRAM are measured too,
and the difference is the rest of the machine: fans, PSU losses, disks, NICs, board.
Measured here, where GPU-only accounting multiplies by a constant from elsewhere
(1.74 in the Olmo 3 follow-up). Only hosts with a meter enter either side, so the two
figures cover the same machines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from wattlog.accounting.it_energy import energy_label
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.accounting.units import readable, readable_range
from wattlog.records import Kind

_READERS = {"redfish": "Redfish", "dcmi": "IPMI DCMI"}
"""Device-id prefix of the node sensors (telemetry.sensors.redfish_node, dcmi) -> how the BMC was read."""


@dataclass(frozen=True, slots=True)
class NodeBoundary:
    """Node meters' energy and the devices' on the same hosts, joules, each with its band.

    Attributes:
        hosts: The hosts with a node meter.
        node_j: The meters' energy (best estimate); node_low_j, node_high_j its band.
        devices_j: GPU+CPU+DRAM energy on those hosts; devices_low_j, devices_high_j its band.
        source: The meters' source label (counter, sampled).
        reader: How the BMC was read ("Redfish", "IPMI DCMI", "BMC" when not said).
    """

    hosts: tuple[str, ...]
    node_j: float
    node_low_j: float
    node_high_j: float
    devices_j: float
    devices_low_j: float
    devices_high_j: float
    source: str
    reader: str

    @property
    def rest_j(self) -> float:
        """The node less its devices: fans, PSU losses, disks, NICs (may be < 0 within the bands)."""
        return self.node_j - self.devices_j

    @property
    def rest_band_j(self) -> tuple[float, float]:
        """The widest (low, high) the difference allows, from the two bands."""
        return self.node_low_j - self.devices_high_j, self.node_high_j - self.devices_low_j

    @property
    def ratio(self) -> float | None:
        """Node over devices: the site's measured overhead multiplier (None without device energy)."""
        return self.node_j / self.devices_j if self.devices_j > 0 else None

    def note(self) -> str:
        """One line for the table: both figures with source and band, and their difference."""
        node = readable_range(self.node_low_j, self.node_high_j, "energy")
        devices = readable_range(self.devices_low_j, self.devices_high_j, "energy")
        low, high = self.rest_band_j
        ratio = "-" if self.ratio is None else f"x{self.ratio:.2f}"
        return (
            f"node boundary ({self.reader} BMC, {self.source}, {len(self.hosts)} host(s)): "
            f"{readable(self.node_j, 'energy')} [{node}]; GPU+CPU+DRAM there: "
            f"{readable(self.devices_j, 'energy')} [{devices}]; difference (fans, PSU losses, disks, NICs): "
            f"{readable(self.rest_j, 'energy')} [{readable(low, 'energy')} to {readable(high, 'energy')}], "
            f"node/devices {ratio}, measured"
        )


def node_boundary(totals: Iterable[EnergyTotal]) -> NodeBoundary | None:
    """The node meters beside their hosts' devices; None when no host has a meter."""
    rows = list(totals)
    meters = [r for r in rows if r.kind == Kind.NODE]
    if not meters:
        return None
    hosts = tuple(sorted({r.host for r in meters}))
    parts = [r for r in rows if r.kind != Kind.NODE and r.host in hosts]
    readers = {_READERS.get(r.device.split(":", 1)[0], "BMC") for r in meters}
    return NodeBoundary(
        hosts,
        sum(r.energy_j for r in meters),
        sum(r.low_j for r in meters),
        sum(r.high_j for r in meters),
        sum(r.energy_j for r in parts),
        sum(r.low_j for r in parts),
        sum(r.high_j for r in parts),
        energy_label(r.source for r in meters),
        "+".join(sorted(readers)),
    )
