"""`wattlog disclose RUN | --project P --format mdf|json|spdx|cyclonedx|sci`: the published forms."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.commands.table_options import ProjectOption, SiteOption
from wattlog.accounting.publishing.disclosure.model import Disclosure
from wattlog.errors import ConfigError
from wattlog.options import DbOption, DiscloseFormat, DiscloseFormatOption, SitesFileOption


class Method(StrEnum):
    """Carbon accounting method asked for (SCI admits location-based only)."""

    LOCATION = "location"
    MARKET = "market"


def disclose(
    run: Annotated[str | None, typer.Argument(help="The run (name or id); or --project.")] = None,
    project: ProjectOption = None,
    fmt: DiscloseFormatOption = DiscloseFormat.MDF,
    method: Annotated[
        Method, typer.Option("--method", help="Carbon method: location (SCI admits no other) or market.")
    ] = Method.LOCATION,
    db: DbOption = None,
    site: SiteOption = None,
    sites_file: SitesFileOption = None,
) -> None:
    """Write what was measured and how for a run or a project's phases, in a published form."""
    from wattlog.accounting.ledger.engine import make_engine
    from wattlog.accounting.ledger.store import Ledger
    from wattlog.accounting.publishing.disclosure.gather import disclosure_of_project, disclosure_of_run
    from wattlog.accounting.publishing.run_table import TableOptions

    if (run is None) == (project is None):
        raise ConfigError("give one run or --project, not both and not neither")
    if method == Method.MARKET:  # refused before anything is read
        raise ConfigError(_market_refusal(fmt))
    options = TableOptions(catalog=site_catalog(sites_file), site=site)
    engine = make_engine(db, create=False)
    try:
        ledger = Ledger(engine)
        created_s = ledger.wall_s()
        if project is not None:
            found = disclosure_of_project(ledger, project, options)
        else:
            assert run is not None
            found = disclosure_of_run(ledger, run, options)
    finally:
        engine.dispose()
    if fmt == DiscloseFormat.SCI:
        from wattlog.accounting.publishing.disclosure.sci import to_sci

        text, complete = to_sci(found)
        typer.echo(text, nl=False)
        if not complete:  # some score could not be computed: said above, and the exit says so too
            raise typer.Exit(1)
    else:
        typer.echo(render(found, fmt, created_s), nl=False)
    # written, but a reviewer must see what failed the gate or has no energy at all
    if any(p.invalid or p.outer is None for p in found.phases):
        raise typer.Exit(1)


def _market_refusal(fmt: DiscloseFormat) -> str:
    if fmt == DiscloseFormat.SCI:
        from wattlog.accounting.publishing.disclosure.sci import MARKET_REFUSAL

        return MARKET_REFUSAL
    return "disclose writes location-based emissions; market-based beside them: `wattlog scope2`"


def render(disclosure: Disclosure, fmt: DiscloseFormat, created_s: float) -> str:
    """The disclosure in `fmt` (`created_s`: the document's time, Unix s), SCI aside."""
    if fmt == DiscloseFormat.MDF:
        from wattlog.accounting.publishing.disclosure.mdf import to_mdf

        return to_mdf(disclosure)
    if fmt == DiscloseFormat.SPDX:
        from wattlog.accounting.publishing.disclosure.spdx import to_spdx

        return to_spdx(disclosure, created_s)
    if fmt == DiscloseFormat.CYCLONEDX:
        from wattlog.accounting.publishing.disclosure.cyclonedx import to_cyclonedx

        return to_cyclonedx(disclosure, created_s)
    from wattlog.accounting.publishing.disclosure.json_doc import to_json

    return to_json(disclosure)


def register(app: typer.Typer) -> None:
    """Add `wattlog disclose` to the root app."""
    app.command("disclose")(disclose)
