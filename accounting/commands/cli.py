"""Accounting commands: `wattlog sites` (the site catalog, each value with its source) and `wattlog table`."""

from __future__ import annotations

from collections.abc import Iterable

import typer

from wattlog.accounting.carbon.intensity.registry import registered
from wattlog.accounting.carbon.sites import SITE_FIELDS, Site, site_catalog
from wattlog.accounting.commands.audit_cli import register as register_audit
from wattlog.accounting.commands.calibrate_cli import WindowMeasure
from wattlog.accounting.commands.calibrate_cli import register as register_calibrate
from wattlog.accounting.commands.card_cli import register as register_card
from wattlog.accounting.commands.disclose_cli import register as register_disclose
from wattlog.accounting.commands.estimate_cli import register as register_estimate
from wattlog.accounting.commands.intensity_cli import register as register_intensity
from wattlog.accounting.commands.ledger_cli import register as register_ledger
from wattlog.accounting.commands.node_cli import register as register_node
from wattlog.accounting.commands.partitions_cli import register as register_partitions
from wattlog.accounting.commands.runs_cli import register as register_runs
from wattlog.accounting.commands.scope2_cli import register as register_scope2
from wattlog.accounting.commands.slurm_cli import register as register_slurm
from wattlog.accounting.commands.table_cli import register as register_table
from wattlog.accounting.commands.windows_cli import register as register_windows
from wattlog.accounting.publishing.render import TableFormat, render_grid, show
from wattlog.accounting.ranges import format_quantity
from wattlog.options import FormatOption, SitesFileOption
from wattlog.plugins import BUILT_IN

_FIELD_LABELS = {
    "pue": "PUE",
    "wue_onsite_l_per_kwh": "WUE on-site (L/kWh)",
    "wue_offsite_l_per_kwh": "WUE off-site (L/kWh)",
    "carbon_intensity_kg_per_kwh": "Carbon intensity (kg CO2e/kWh)",
}
_HOURLY_LABEL = "Carbon intensity in tables"


def register(app: typer.Typer, measure: WindowMeasure | None = None) -> None:
    """Add the accounting commands to the root app (`measure`: how `calibrate` records its own window)."""
    app.command("sites")(sites)
    register_table(app)
    register_node(app)
    register_ledger(app)
    register_partitions(app)
    register_windows(app)
    register_intensity(app)
    register_scope2(app)
    register_runs(app)
    register_calibrate(app, measure)
    register_audit(app)
    register_slurm(app)
    register_disclose(app)
    register_estimate(app)
    register_card(app)


def sites(sites_file: SitesFileOption = None, fmt: FormatOption = TableFormat.RICH) -> None:
    """List the site catalog: PUE, WUE and carbon intensity, each with its source."""
    catalog = site_catalog(sites_file)
    notes = [f"{site.name}: {site.description}" for site in catalog.values() if site.description]
    if sites_file is not None:
        notes.append(f"user sites from {sites_file} (they override built-in sites of the same name)")
    notes.extend(plugin_notes())
    cells = site_cells(catalog.values())
    show(render_grid(["Site", "Figure", "Value", "Source"], cells, notes, fmt, right={2}))


def plugin_notes() -> list[str]:
    """The intensity sources installed packages brought (entry points), and those that failed to load."""
    found = registered()
    brought = [f"{source.name} ({origin})" for source, origin in found.sources if origin != BUILT_IN]
    lines = [f"intensity sources from plugins: {', '.join(brought)}"] if brought else []
    return lines + [f"plugin not loaded: {line}" for line in found.failures]


def site_cells(sites: Iterable[Site]) -> list[list[str]]:
    """One row per site and figure: site, figure name, value ("1.29-4.26" for a range), source.

    A site whose tables use an hourly intensity has one more row naming that source.
    """
    cells: list[list[str]] = []
    for site in sites:
        for name in SITE_FIELDS:
            value = format_quantity(getattr(site, name), "g")
            cells.append([site.name, _FIELD_LABELS[name], value, site.source(name)])
        if site.intensity_source.source != "constant":
            cells.append([site.name, _HOURLY_LABEL, "hourly", site.intensity_source.describe()])
    return cells
