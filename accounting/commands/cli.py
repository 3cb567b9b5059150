"""`wattlog sites`: the site catalog, each value with its source (wattlog.cli lists each command's home)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import typer

from wattlog.options import FormatOption, SitesFileOption, TableFormat

if TYPE_CHECKING:
    from wattlog.accounting.carbon.sites import Site

_FIELD_LABELS = {
    "pue": "PUE",
    "wue_onsite_l_per_kwh": "WUE on-site (L/kWh)",
    "wue_offsite_l_per_kwh": "WUE off-site (L/kWh)",
    "carbon_intensity_kg_per_kwh": "Carbon intensity (kg CO2e/kWh)",
}
_HOURLY_LABEL = "Carbon intensity in tables"


def register(app: typer.Typer) -> None:
    """Add `wattlog sites` to the root app (each other command registers from its own module)."""
    app.command("sites")(sites)


def sites(sites_file: SitesFileOption = None, fmt: FormatOption = TableFormat.RICH) -> None:
    """List the site catalog: PUE, WUE and carbon intensity, each with its source."""
    from wattlog.accounting.carbon.sites import site_catalog
    from wattlog.accounting.publishing.render import render_grid, show

    catalog = site_catalog(sites_file)
    notes = [f"{site.name}: {site.description}" for site in catalog.values() if site.description]
    if sites_file is not None:
        notes.append(f"user sites from {sites_file} (they override built-in sites of the same name)")
    notes.extend(plugin_notes())
    cells = site_cells(catalog.values())
    show(render_grid(["Site", "Figure", "Value", "Source"], cells, notes, fmt, right={2}))


def plugin_notes() -> list[str]:
    """The intensity sources installed packages brought (entry points), and those that failed to load."""
    from wattlog.accounting.carbon.intensity.registry import registered
    from wattlog.plugins import BUILT_IN

    found = registered()
    brought = [f"{source.name} ({origin})" for source, origin in found.sources if origin != BUILT_IN]
    lines = [f"intensity sources from plugins: {', '.join(brought)}"] if brought else []
    return lines + [f"plugin not loaded: {line}" for line in found.failures]


def site_cells(sites: Iterable[Site]) -> list[list[str]]:
    """One row per site and figure: site, figure name, value ("1.29-4.26" for a range), source.

    A site whose tables use an hourly intensity has one more row naming that source.
    """
    from wattlog.accounting.carbon.sites import SITE_FIELDS
    from wattlog.accounting.ranges import format_quantity

    cells: list[list[str]] = []
    for site in sites:
        for name in SITE_FIELDS:
            value = format_quantity(getattr(site, name), "g")
            cells.append([site.name, _FIELD_LABELS[name], value, site.source(name)])
        if site.intensity_source.source != "constant":
            cells.append([site.name, _HOURLY_LABEL, "hourly", site.intensity_source.describe()])
    return cells
