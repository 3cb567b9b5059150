"""`wattlog table RUN --format hf`: a run's figures as a Hugging Face model card's co2_eq_emissions block."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import RunInfo
from wattlog.accounting.publishing.exports import TRAINING_TYPES, ModelCardFacts, hf_block
from wattlog.accounting.publishing.render import TableRow, format_figure
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.accounting.units import mwh_of
from wattlog.errors import ConfigError


def _version() -> str:
    try:
        return version("wattlog")
    except PackageNotFoundError:  # running from a source tree
        return "dev"


def hardware(ledger: Ledger, run: RunInfo) -> str:
    """E.g. "8 x H100", or the kinds measured ("CPU (estimated)") when the run had no GPUs."""
    _, gpus = ledger.device_seconds(run.name, "gpu")
    if gpus:
        return f"{gpus} x {run.device_model or 'GPU'}"
    totals = ledger.energy_totals(run.name)
    kinds = sorted({f"{t.kind.upper()} ({t.source})" for t in totals})
    return ", ".join(kinds) or "not recorded"


def model_card_facts(ledger: Ledger, run: RunInfo, row: TableRow, options: TableOptions) -> str:
    """The co2_eq_emissions YAML block for `run`, whose table row is `row`.

    Raises:
        ConfigError: The run has no emissions (no energy, or no site).
    """
    if row.co2_t is None:
        raise ConfigError(
            f"run {run.name!r} has no emissions to publish: {'; '.join(row.notes) or 'no energy'}"
        )
    site_name = options.site or run.site
    site = options.catalog.get(site_name)
    location = (site.description if site and site.description else site_name) or "not recorded"
    energy = format_figure("total_power_mwh", row.figure("total_power_mwh"))
    band = format_figure("total_power_mwh", mwh_of(row.energy_band_j))
    intensity = format_figure("carbon_intensity_kg_per_kwh", row.carbon_intensity_kg_per_kwh)
    source = (
        f"wattlog {_version()}: energy {row.energy_source} ({energy} MWh, band {band}), "
        f"PUE {format_figure('pue', row.pue)}, carbon intensity {intensity} kg/kWh (site {site_name})"
    )
    stage = run.stage or "pretraining"
    facts = ModelCardFacts(
        source=source,
        training_type=TRAINING_TYPES.get(stage, stage),
        geographical_location=location,
        hardware_used=hardware(ledger, run),
    )
    return hf_block(row, facts)
