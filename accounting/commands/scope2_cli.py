"""`wattlog scope2 RUN...`: location-based and market-based CO2 side by side, annual and hourly matching.

Runs are matched in the order given, each instrument's MWh used once across them and across
calls: the ledger records what each run used (:mod:`wattlog.accounting.carbon.instruments`),
a run matches against what every other run left, and accounting a run again replaces its own
uses (the same share, never a second one). ``--dry-run`` records nothing. Location-based
CO2 takes the site's intensity path (hourly where the site names a series or provider);
market-based takes the site's instruments and residual mix from ``--market-file``
(:mod:`wattlog.accounting.carbon.market`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wattlog.accounting.carbon.market import load_markets
from wattlog.accounting.carbon.scope2 import Allocation, Matching
from wattlog.accounting.carbon.sites import get_site, site_catalog
from wattlog.accounting.publishing.footprint import CarbonPath
from wattlog.accounting.publishing.render import TableFormat, render_grid, show
from wattlog.accounting.ranges import format_quantity
from wattlog.errors import ConfigError
from wattlog.options import DbOption, FormatOption, SitesFileOption

_HEADERS = [
    "Run",
    "Facility MWh",
    "Location-based t",
    "Market annual t",
    "Covered annual MWh",
    "Market hourly t",
    "Covered hourly MWh",
]


def scope2(
    runs: Annotated[list[str], typer.Argument(help="Runs (names or ids), matched in this order.")],
    site: Annotated[str, typer.Option("--site", help="The site whose grid and instruments to use.")],
    market_file: Annotated[Path, typer.Option("--market-file", help="TOML with [sites.NAME.market] tables.")],
    db: DbOption = None,
    sites_file: SitesFileOption = None,
    fmt: FormatOption = TableFormat.RICH,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Match against recorded uses but record nothing.")
    ] = False,
) -> None:
    """Location-based and market-based CO2 of runs (GHG Protocol Scope 2 dual reporting)."""
    from wattlog.accounting.carbon.instruments import load_uses, replace_uses
    from wattlog.accounting.ledger.engine import describe_url, make_engine
    from wattlog.accounting.ledger.run_energy import ledger_energy
    from wattlog.accounting.ledger.store import Ledger

    chosen = get_site(site, site_catalog(sites_file))
    market = load_markets(market_file).get(chosen.name)
    if market is None:
        raise ConfigError(f"{market_file} has no [sites.{chosen.name}.market] table")
    annual, hourly = Allocation(market, Matching.ANNUAL), Allocation(market, Matching.HOURLY)
    engine = make_engine(db, create=False)
    cells = []
    try:
        ledger = Ledger(engine)
        path = CarbonPath.of(chosen, ledger=ledger)
        for allocation in (annual, hourly):
            allocation.record(load_uses(ledger, chosen.name, allocation.method.value))
        for run in runs:
            energy = ledger_energy(ledger, run)
            if energy is None or not energy.by_hour_mwh:
                cells.append([run, "-", "-", "-", "-", "-", "-"])  # no energy recorded: nothing to match
                continue
            by_hour = dict(energy.by_hour_mwh)
            location = path.co2_t(energy.it_mwh, by_hour)
            name = ledger.get_run(run).name  # a run named by id or name is one run
            a, h = annual.apply(by_hour, chosen.pue, name), hourly.apply(by_hour, chosen.pue, name)
            if not dry_run:
                for figure in (a, h):
                    replace_uses(ledger, chosen.name, figure.method.value, name, figure.uses)
            cells.append(
                [run, f"{a.facility_mwh:.4g}", format_quantity(location, ".4g")]
                + [f"{a.co2_t:.4g}", f"{a.covered_mwh:.4g}", f"{h.co2_t:.4g}", f"{h.covered_mwh:.4g}"]
            )
    finally:
        engine.dispose()
    unused = ", ".join(f"{k} {v:.4g}" for k, v in annual.unused().items() if v > 0) or "none"
    notes = [
        f"Location-based: {path.intensity.label}, PUE {format_quantity(chosen.pue, 'g')}.",
        f"{Matching.ANNUAL.description}; {Matching.HOURLY.description}.",
        f"Residual mix {market.residual_mix_kg_per_kwh:g} kg/kWh ({market.residual_mix_source}).",
        f"Instruments left after annual matching (MWh): {unused}. Ledger: {describe_url(db)}"
        + (" (dry run: uses not recorded)." if dry_run else " (uses recorded: no MWh is used twice)."),
    ]
    show(render_grid(_HEADERS, cells, notes, fmt, right={1, 2, 3, 4, 5, 6}))


def register(app: typer.Typer) -> None:
    """Add `wattlog scope2` to the root app."""
    app.command("scope2")(scope2)
