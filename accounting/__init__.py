"""Accounting: energy into MWh, CO2 and water, the way OLMo 2's Table 19 does it.

Map of the package: five rooms, each importing only those below it (README.md says more; nothing
here imports torch):

- ``commands``    every `wattlog` command registered from accounting (``*_cli.py``).
- ``fleet``       a node of a job, SLURM hooks, the DCGM reader, ``recording`` (the composition root).
- ``publishing``  footprint (facility_energy_mwh, co2_t, water_kl, co2_t_hourly, Footprint,
                  footprint_for), render (TableRow and the Table-19 renderers: to_rich, to_markdown,
                  to_latex, to_csv, to_html, render(rows, format), show()), reference (Table 19's five
                  published rows, OPT-175B), tables, exports, validity, the audit bundle.
- ``carbon``      intensity (IntensitySource, ConstantIntensity, HourlySeries.from_csv,
                  split_by_hour_mwh; live providers), sites (Site, the built-in catalog
                  data/sites.toml, user sites, get_site), Scope 2 and market matching, grid water.
- ``ledger``      the durable store of runs and energy (SQLModel, Alembic).
- at the top: ``units`` (j_to_kwh, j_to_mwh, ...: units in their names), ``ranges`` (Range,
  Quantity = float | Range), ``it_energy`` (Energy in joules, energy_label, PUBLISHED),
  ``devices``, ``progress``.

The names below are imported on first use (wattlog.lazy), so ``import wattlog.accounting.units``
loads neither rich nor SQLAlchemy; type checkers see them through the ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from wattlog.lazy import lazy_package

if TYPE_CHECKING:
    from wattlog.accounting.carbon.intensity import (
        ConstantIntensity,
        HourlySeries,
        IntensitySource,
        split_by_hour_mwh,
    )
    from wattlog.accounting.carbon.sites import Site, builtin_sites, get_site, load_sites, site_catalog
    from wattlog.accounting.it_energy import PUBLISHED, Energy, energy_label
    from wattlog.accounting.publishing.footprint import (
        Footprint,
        WaterConvention,
        co2_t,
        co2_t_hourly,
        facility_energy_mwh,
        footprint_for,
        water_kl,
    )
    from wattlog.accounting.publishing.reference import (
        ReferenceRow,
        reference_rows,
        reference_table_rows,
        table19_rows,
    )
    from wattlog.accounting.publishing.render import (
        TableFormat,
        TableRow,
        render,
        show,
        to_csv,
        to_html,
        to_latex,
        to_markdown,
        to_rich,
    )
    from wattlog.accounting.ranges import Quantity, Range
    from wattlog.accounting.units import j_to_kwh, j_to_mwh, kwh_to_mwh, mwh_to_kwh

logging.getLogger(__name__).addHandler(logging.NullHandler())

_HOMES = {
    "ConstantIntensity": "wattlog.accounting.carbon.intensity",
    "Energy": "wattlog.accounting.it_energy",
    "Footprint": "wattlog.accounting.publishing.footprint",
    "HourlySeries": "wattlog.accounting.carbon.intensity",
    "IntensitySource": "wattlog.accounting.carbon.intensity",
    "PUBLISHED": "wattlog.accounting.it_energy",
    "Quantity": "wattlog.accounting.ranges",
    "Range": "wattlog.accounting.ranges",
    "ReferenceRow": "wattlog.accounting.publishing.reference",
    "Site": "wattlog.accounting.carbon.sites",
    "TableFormat": "wattlog.accounting.publishing.render",
    "TableRow": "wattlog.accounting.publishing.render",
    "WaterConvention": "wattlog.accounting.publishing.footprint",
    "builtin_sites": "wattlog.accounting.carbon.sites",
    "co2_t": "wattlog.accounting.publishing.footprint",
    "co2_t_hourly": "wattlog.accounting.publishing.footprint",
    "energy_label": "wattlog.accounting.it_energy",
    "facility_energy_mwh": "wattlog.accounting.publishing.footprint",
    "footprint_for": "wattlog.accounting.publishing.footprint",
    "get_site": "wattlog.accounting.carbon.sites",
    "j_to_kwh": "wattlog.accounting.units",
    "j_to_mwh": "wattlog.accounting.units",
    "kwh_to_mwh": "wattlog.accounting.units",
    "load_sites": "wattlog.accounting.carbon.sites",
    "mwh_to_kwh": "wattlog.accounting.units",
    "reference_rows": "wattlog.accounting.publishing.reference",
    "reference_table_rows": "wattlog.accounting.publishing.reference",
    "render": "wattlog.accounting.publishing.render",
    "show": "wattlog.accounting.publishing.render",
    "site_catalog": "wattlog.accounting.carbon.sites",
    "split_by_hour_mwh": "wattlog.accounting.carbon.intensity",
    "table19_rows": "wattlog.accounting.publishing.reference",
    "to_csv": "wattlog.accounting.publishing.render",
    "to_html": "wattlog.accounting.publishing.render",
    "to_latex": "wattlog.accounting.publishing.render",
    "to_markdown": "wattlog.accounting.publishing.render",
    "to_rich": "wattlog.accounting.publishing.render",
    "water_kl": "wattlog.accounting.publishing.footprint",
}

__all__ = [
    "PUBLISHED",
    "ConstantIntensity",
    "Energy",
    "Footprint",
    "HourlySeries",
    "IntensitySource",
    "Quantity",
    "Range",
    "ReferenceRow",
    "Site",
    "TableFormat",
    "TableRow",
    "WaterConvention",
    "builtin_sites",
    "co2_t",
    "co2_t_hourly",
    "energy_label",
    "facility_energy_mwh",
    "footprint_for",
    "get_site",
    "j_to_kwh",
    "j_to_mwh",
    "kwh_to_mwh",
    "load_sites",
    "mwh_to_kwh",
    "reference_rows",
    "reference_table_rows",
    "render",
    "show",
    "site_catalog",
    "split_by_hour_mwh",
    "table19_rows",
    "to_csv",
    "to_html",
    "to_latex",
    "to_markdown",
    "to_rich",
    "water_kl",
]

lazy_package(__name__, _HOMES)
