"""`wattlog disclose RUN | --project P --format mdf|json|spdx|cyclonedx|sci`: the published forms."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from wattlog.accounting.ledger.engine import make_engine
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.publishing.disclosure.gather import disclosure_of_project, disclosure_of_run
from wattlog.accounting.publishing.disclosure.model import Disclosure
from wattlog.accounting.run_table import TableOptions
from wattlog.accounting.sites import site_catalog
from wattlog.accounting.table_options import ProjectOption, SiteOption
from wattlog.errors import ConfigError
from wattlog.options import DbOption, SitesFileOption


class DiscloseFormat(StrEnum):
    """What `wattlog disclose` writes."""

    MDF = "mdf"
    JSON = "json"
    SPDX = "spdx"
    CYCLONEDX = "cyclonedx"
    SCI = "sci"


class Method(StrEnum):
    """Carbon accounting method asked for (SCI admits location-based only)."""

    LOCATION = "location"
    MARKET = "market"


def disclose(
    run: Annotated[str | None, typer.Argument(help="The run (name or id); or --project.")] = None,
    project: ProjectOption = None,
    fmt: Annotated[
        DiscloseFormat,
        typer.Option("--format", help="mdf (EU AI Act form items), json, spdx, cyclonedx, sci."),
    ] = DiscloseFormat.MDF,
    method: Annotated[
        Method, typer.Option("--method", help="Carbon method: location (SCI admits no other) or market.")
    ] = Method.LOCATION,
    db: DbOption = None,
    site: SiteOption = None,
    sites_file: SitesFileOption = None,
) -> None:
    """Write what was measured and how for a run or a project's phases, in a published form."""
    if (run is None) == (project is None):
        raise ConfigError("give one run or --project, not both and not neither")
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
    typer.echo(render(found, fmt, method, created_s), nl=False)
    if any(p.invalid for p in found.phases):  # written, but a reviewer must see it failed the gate
        raise typer.Exit(1)


def render(disclosure: Disclosure, fmt: DiscloseFormat, method: Method, created_s: float) -> str:
    """The disclosure in `fmt` (`created_s`: the document's time, Unix s).

    Raises:
        ConfigError: A method the format does not admit (SCI with market-based intensity).
    """
    if method == Method.MARKET and fmt == DiscloseFormat.SCI:
        raise ConfigError(
            "SCI (ISO/IEC 21031) admits only location-based intensity: certificates, PPAs and offsets never "
            "lower an SCI score; run with --method location (market-based figures: `wattlog scope2`)"
        )
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
