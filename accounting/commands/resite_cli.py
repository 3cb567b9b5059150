"""`wattlog runs resite RUN SITE`: account a run with another site's figures, as a recorded change.

A run keeps the site figures it started with (accounting.carbon.run_sites): editing sites.toml
changes no stored run. To change a run's site or take the catalog's current figures on purpose,
this command stores them and records a ``resite`` event with the figures before and after.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from wattlog.accounting.carbon.sites import SITE_FIELDS, run_catalog, site_catalog
from wattlog.options import DbOption, SitesFileOption


def resite_command(
    run: Annotated[str, typer.Argument(help="Run name or id.")],
    site: Annotated[
        str, typer.Argument(help="The site whose figures the run is accounted with from now on.")
    ],
    reason: Annotated[str, typer.Option("--reason", help="Why, in words (stored with the change).")] = "",
    sites_file: SitesFileOption = None,
    db: DbOption = None,
) -> None:
    """Account a run with SITE's figures as the catalog gives them now; the change is recorded."""
    from wattlog.accounting.carbon.run_sites import resite
    from wattlog.accounting.ledger.engine import describe_url, make_engine
    from wattlog.accounting.ledger.store import Ledger

    catalog = site_catalog(sites_file) if sites_file else run_catalog()
    engine = make_engine(db, create=False)
    try:
        ledger = Ledger(engine)
        before = ledger.get_run(run)
        after = resite(ledger, run, site, catalog, reason or "wattlog runs resite")
    finally:
        engine.dispose()
    stored: Mapping[str, Any] = after.site_figures or {}
    figures = stored.get("figures", {})
    shown = ", ".join(f"{name} {figures[name]['value']} ({figures[name]['source']})" for name in SITE_FIELDS)
    print(
        f"run {after.name}: site {before.site or '-'} -> {after.site}: {shown}; "
        f"recorded as a resite event (ledger {describe_url(db)})"
    )


def register(app: typer.Typer) -> None:
    """Add `resite` to the `wattlog runs` sub-app."""
    app.command("resite")(resite_command)
