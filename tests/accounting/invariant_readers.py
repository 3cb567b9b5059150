"""Readers of a run's figures outside the ledger, for the invariants: the audit bundle and the exposition.

`bundle_band` builds the run's audit bundle, verifies it and gives the band its row has when
recomputed from the bundle alone; `exposition_figures` renders the agent's snapshot through the
exporter's collector and parses the text back with prometheus_client's own parser, as Prometheus
would read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from wattlog.accounting.ledger import Ledger
from wattlog.accounting.publishing.audit.bundle import build_bundle, verify_bundle
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.accounting.ranges import Range
from wattlog.metric_names import MetricName
from wattlog.records import EnergyFigure
from wattlog.telemetry.exporter import BOUNDS, EnergyCollector
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo


def bundle_band(ledger: Ledger, run: int, options: TableOptions, out: Path) -> Range | None:
    """The band of `run`'s row recomputed from its audit bundle alone (written to `out`, a .tar.gz).

    Raises:
        AssertionError: The bundle does not verify (its problems in the message).
    """
    result = verify_bundle(build_bundle(ledger, run, options, out))
    out.unlink()
    assert result.ok, f"the audit bundle does not verify: {result.problems}"
    assert result.row is not None
    return result.row.energy_band_j


def exposition_figures(
    devices: Sequence[tuple[DeviceInfo, EnergyFigure]], host: str
) -> dict[str, dict[str, float]]:
    """What a scrape of an agent holding `devices`' figures reads: per device, its energy and BOUNDS.

    The exporter's EnergyCollector renders the snapshot to the text format, and the text is parsed back.
    """
    snapshot = [DeviceEnergy(info, figure, None, 1, 0, 0.0) for info, figure in devices]
    registry = CollectorRegistry()
    registry.register(EnergyCollector(lambda: snapshot, host))
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            device = out.setdefault(sample.labels.get("device", ""), {})
            if sample.name == MetricName.ENERGY_JOULES_TOTAL:
                device["energy"] = sample.value
            elif sample.name == MetricName.ENERGY_UNCERTAINTY_JOULES and sample.labels["bound"] in BOUNDS:
                device[sample.labels["bound"]] = sample.value
    return {device: figures for device, figures in out.items() if "energy" in figures}
