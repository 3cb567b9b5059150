"""A job's energy when only K of its N nodes were measured: the OLMo 2 paper's method, with a band.

The paper measured one node and multiplied by the number of nodes. Here::

    energy  = mean over the K measured nodes x N                         (labelled `extrapolated`)
    low     = sum of the measured nodes' lows  + (N - K) x the smallest measured node's low
    high    = sum of the measured nodes' highs + (N - K) x the largest measured node's high

so the band holds both each node's sensor band and the spread between the
measured nodes: it assumes every unmeasured node used between the least and
the most any measured node did. That holds when the measured nodes are
spread over the job (``--sample-nodes`` picks them evenly) and fails for a
node unlike every sampled one, which is why tables say "K of N nodes measured".
When every node was measured the figure is their plain sum, with its own label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from wattlog.accounting.it_energy import Energy, energy_label
from wattlog.accounting.ledger.run_energy import energy_from_devices
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.errors import ConfigError
from wattlog.records import EnergyFigure, Kind, Source


def job_energy(
    devices: Iterable[EnergyTotal], node_count: int, by_hour_j: Mapping[int, float] | None = None
) -> Energy | None:
    """The job's IT energy from the devices of the nodes that were measured.

    Args:
        devices: Per-device totals (ledger or Prometheus); their hosts are the measured nodes.
        node_count: Nodes in the job (N).
        by_hour_j: The measured nodes' energy per hour (hour start, Unix s -> J), if known;
            scaled by N / K like the total.

    Returns:
        None without any energy; the measured sum when all N nodes (or more) are there; else the
        extrapolated figure, labelled `extrapolated` (plus `simulated` when simulated devices went in).

    Raises:
        ConfigError: node_count below 1.
    """
    if node_count < 1:
        raise ConfigError(f"a job has at least one node, got {node_count}")
    rows = list(devices)
    by_host: dict[str, list[EnergyTotal]] = {}
    for row in rows:
        by_host.setdefault(row.host, []).append(row)
    measured = len(by_host)
    if measured == 0:
        return None
    if measured >= node_count:
        return energy_from_devices(rows, dict(by_hour_j) if by_hour_j is not None else None)
    nodes = [n for n in (energy_from_devices(host_rows) for host_rows in by_host.values()) if n is not None]
    bands = [(sum(f.low_j for f in n.figures), sum(f.high_j for f in n.figures)) for n in nodes]
    scale = node_count / measured
    unmeasured = node_count - measured
    low = sum(lo for lo, _ in bands) + unmeasured * min(lo for lo, _ in bands)
    high = sum(hi for _, hi in bands) + unmeasured * max(hi for _, hi in bands)
    sources = {Source.EXTRAPOLATED.value}
    if any(str(r.source) == Source.SIMULATED.value for r in rows):
        sources.add(Source.SIMULATED.value)  # a simulated figure stays labelled simulated, scaled or not
    # the job as one figure: the nodes' kinds are summed and scaled together
    job = EnergyFigure(Kind.NODE, Source.EXTRAPOLATED, sum(n.it_j for n in nodes) * scale, low, high)
    gpu = [n.gpu_j for n in nodes]
    return Energy(
        (job,),
        {h: v * scale for h, v in by_hour_j.items()} if by_hour_j is not None else None,
        sum(g for g in gpu if g is not None) * scale if all(g is not None for g in gpu) else None,
        energy_label(sources),
    )
