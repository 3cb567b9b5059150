"""A run's power fluctuation from the ledger as readable cells (`wattlog table --power`, the report)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from wattlog.accounting.devices import DeviceCatalog, device_catalog
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import RunInfo
from wattlog.accounting.publishing.power import PowerFluctuation, power_fluctuation
from wattlog.accounting.units import readable, sig3

POWER_HEADERS = [
    "Run", "% of power limit (min / median / max)", "Dips", "Dip depth (median / max)",
    "Dip duration (median)", "Swing", "Ramp (max)", "Resolution",
]  # fmt: skip

POWER_NOTES = [
    "Power is each GPU sample's mean power as a % of the device's power limit; the job's power sums every "
    "device (whole-node meters where a host has one).",
    "A dip is a stretch of the job's power more than 30 % below its median (checkpoints, stalls); depth = "
    "1 - its lowest power / median; duration = the energy it lacked / (median - lowest power). Swing = "
    "max - min of the job's power; ramp = its steepest change between neighbouring samples. "
    "Features shorter than the resolution (the flush interval) are smeared.",
    "Why it matters: synchronised dips across thousands of GPUs are seen by the grid (Morrison et al., "
    "ICLR 2025: H100s swung between about 15 % and 85 % of 700 W).",
]


def run_power(
    ledger: Ledger, run: RunInfo, devices: DeviceCatalog | None = None
) -> tuple[PowerFluctuation | None, list[str]]:
    """The run's power figures and notes (which power limit was used, and whether it was assumed)."""
    model, assumed = (devices or device_catalog()).get(run.device_model)
    figures = power_fluctuation(ledger.energy_rows(run.name), model.power_limit_w)
    notes = []
    if figures is not None and figures.limit_pct is not None:
        how = "assumed: no device model recorded" if assumed else "recorded device model"
        notes.append(
            f"{run.name}: power limit {model.power_limit_w:g} W per GPU ({model.name}, {how}; "
            f"{model.sources.get('power_limit_w', '')})"
        )
    return figures, notes


def power_cells(name: str, figures: PowerFluctuation | None) -> list[str]:
    """One row of the power grid ("-" where there is no figure)."""
    if figures is None:
        return [name, "-", "0", "-", "-", "-", "-", "-"]
    pct = "-" if figures.limit_pct is None else " / ".join(f"{sig3(p)} %" for p in figures.limit_pct)
    depths = [d.depth for d in figures.dips]
    return [
        name,
        pct,
        str(len(figures.dips)),
        f"{100 * statistics.median(depths):.0f} % / {100 * max(depths):.0f} %" if depths else "-",
        f"{sig3(statistics.median(d.duration_s for d in figures.dips))} s" if depths else "-",
        readable(figures.swing_w, "power"),
        readable(figures.ramp_w_per_s, "ramp"),
        f"{sig3(figures.resolution_s)} s",
    ]


def power_grid(ledger: Ledger, runs: Sequence[RunInfo]) -> tuple[list[str], list[list[str]], list[str]]:
    """Headers, cells and notes of the power table of `runs`."""
    devices = device_catalog()
    cells, notes = [], list(POWER_NOTES)
    for run in runs:
        figures, run_notes = run_power(ledger, run, devices)
        cells.append(power_cells(run.name, figures))
        notes += run_notes
    return list(POWER_HEADERS), cells, notes
