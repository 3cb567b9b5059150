"""The site figures a run is accounted with: taken from the catalog at its start, stored, read back.

Catalogs change the future, never the past (DESIGN.md, wave 4): a run stores its site's PUE, WUE
on- and off-site and carbon intensity, each with its source and year, when it starts; its footprint
reads those, so a later edit of sites.toml changes no stored run. `wattlog runs resite RUN SITE`
changes them on purpose and records the change. A run stored before the figures were (ledger
migration 0018) reads the catalog, and its row says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from wattlog.accounting.carbon.intensity import IntensityRef
from wattlog.accounting.carbon.sites import SITE_FIELDS, Site, get_site
from wattlog.accounting.ledger.run_sites import resite_run
from wattlog.accounting.ledger.runs import RunSpec
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import RunInfo
from wattlog.accounting.ranges import Quantity, Range
from wattlog.errors import ConfigError

FORMAT = 1
"""Version of the stored figures' layout."""
CATALOG_NOTE = "site figures read from today's catalog: this run was stored before runs kept theirs"
_YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")


def site_figures(site: Site, recorded_s: float) -> dict[str, Any]:
    """What a run stores of `site`: each figure with its value ([lo, hi] for a range), source and year."""
    figures = {}
    for name in SITE_FIELDS:
        value: Quantity = getattr(site, name)
        source = site.source(name)
        year = _YEAR.findall(source)
        figures[name] = {
            "value": [value.lo, value.hi] if isinstance(value, Range) else float(value),
            "source": source,
            "year": int(year[-1]) if year else None,
        }
    ref = site.intensity_source
    return {
        "format": FORMAT,
        "site": site.name,
        "description": site.description,
        "recorded_s": recorded_s,
        "figures": figures,
        "intensity": {"source": ref.source, "series": ref.series, "zone": ref.zone},
    }


def stored_site(figures: Mapping[str, Any]) -> Site:
    """The Site a run stored (`site_figures`' layout).

    Raises:
        ConfigError: The stored figures are not in a layout this version reads.
    """
    if figures.get("format") != FORMAT:
        raise ConfigError(f"stored site figures in layout {figures.get('format')!r}: upgrade wattlog")
    values: dict[str, Quantity] = {}
    sources: dict[str, str] = {}
    for name in SITE_FIELDS:
        figure = figures["figures"][name]
        value = figure["value"]
        values[name] = Range(float(value[0]), float(value[1])) if isinstance(value, list) else float(value)
        sources[name] = str(figure["source"])
    ref = figures.get("intensity") or {}
    return Site(
        name=str(figures["site"]),
        sources=sources,
        description=str(figures.get("description", "")),
        intensity_source=IntensityRef(
            ref.get("source", "constant"), ref.get("series", ""), ref.get("zone", "")
        ),
        **values,
    )


def with_site_figures(spec: RunSpec, catalog: Mapping[str, Site], recorded_s: float) -> RunSpec:
    """`spec` carrying its site's figures from `catalog` (unchanged without a site or with its own).

    Raises:
        ConfigError: The site is not in the catalog.
    """
    if not spec.site or spec.site_figures is not None:
        return spec
    return replace(spec, site_figures=site_figures(get_site(spec.site, catalog), recorded_s))


def figures_for(site: str, catalog: Mapping[str, Site], recorded_s: float) -> dict[str, Any] | None:
    """What a run starting at `site` stores (None without a site).

    Raises:
        ConfigError: The site is not in the catalog.
    """
    return site_figures(get_site(site, catalog), recorded_s) if site else None


def run_site(run: RunInfo, catalog: Mapping[str, Site]) -> tuple[Site, str]:
    """The site `run` is accounted with, and a note ("" when its stored figures are used).

    Raises:
        ConfigError: No stored figures and the site is not in the catalog.
    """
    if run.site_figures is not None and run.site_figures.get("site") == run.site:
        return stored_site(run.site_figures), ""
    return get_site(run.site, catalog), CATALOG_NOTE


def resite(ledger: Ledger, run: int | str, site: str, catalog: Mapping[str, Site], reason: str) -> RunInfo:
    """Account `run` with `site`'s figures as the catalog gives them now, recorded as a ``resite`` event.

    Raises:
        ConfigError: The site is not in the catalog.
        RunNotFound: No such run.
    """
    figures = site_figures(get_site(site, catalog), ledger.clock.wall())
    return resite_run(ledger, run, figures["site"], figures, reason)
