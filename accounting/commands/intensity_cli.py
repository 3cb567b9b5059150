"""`wattlog intensity fetch|hours|forecast`: a site's live grid intensity, cached, and the cleanest window.

- ``fetch``: the hours of a run (or a span) from the site's provider into the ledger, with progress;
  exits 1 when the provider lacked hours (they take the site's constant, labelled).
- ``hours``: each hour's intensity and provenance as tables will use it, from the ledger only.
- ``forecast``: the provider's forecast and the cleanest start for a job of N hours.

Keys come from the environment only (``wattlog intensity fetch --help`` names the variables).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated

import typer

from wattlog.accounting.carbon.intensity.hours import hour_start_s, iso_hour, timestamp_s
from wattlog.accounting.carbon.intensity.live.cache import CachedIntensity, fetch_into_ledger, open_grid_water
from wattlog.accounting.carbon.intensity.live.providers import PROVIDERS, ProviderContext, open_provider
from wattlog.accounting.carbon.intensity.live.window import cleanest_window
from wattlog.accounting.carbon.sites import Site, get_site, site_catalog
from wattlog.accounting.publishing.render import TableFormat, render_grid, show
from wattlog.accounting.ranges import bounds, format_quantity
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError
from wattlog.help_layout import PLAIN_HELP
from wattlog.options import DbOption, FormatOption, SitesFileOption

if TYPE_CHECKING:
    from wattlog.accounting.ledger.store import Ledger

_SiteOption = Annotated[str, typer.Option("--site", help="The site whose provider and zone to use.")]
_TimeOption = Annotated[str | None, typer.Option(help="ISO 8601 (UTC when no zone) or Unix seconds.")]
_UrlOption = Annotated[
    str | None,
    typer.Option("--provider-url", help="Another address for the provider's API (a proxy, a replay)."),
]
_PROVIDERS_HELP = "; ".join(f"{name}: {what}" for name, (what, _) in PROVIDERS.items())


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _provider_site(name: str, sites_file: SitesFileOption) -> Site:
    site = get_site(name, site_catalog(sites_file))
    if site.intensity_source.source not in PROVIDERS:
        raise ConfigError(
            f"site {site.name!r} takes its intensity from {site.intensity_source.describe()}, not a live "
            f"provider: set [sites.{site.name}.intensity] source to one of {', '.join(PROVIDERS)} and a zone"
        )
    return site


def _span(ledger: Ledger, run: str | None, start: str | None, end: str | None) -> tuple[float, float]:
    if run is not None:
        info = ledger.get_run(run)
        return info.start_s, info.end_s if info.end_s is not None else time.time()
    if start is None or end is None:
        raise ConfigError("name a --run, or both --start and --end")
    try:
        span = timestamp_s(start), timestamp_s(end)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if span[1] <= span[0]:
        raise ConfigError(f"--end {end} is not after --start {start}")
    return span


def fetch(
    site: _SiteOption,
    run: Annotated[
        str | None, typer.Option("--run", help="Fetch the hours of this run (name or id).")
    ] = None,
    start: _TimeOption = None,
    end: _TimeOption = None,
    db: DbOption = None,
    sites_file: SitesFileOption = None,
    provider_url: _UrlOption = None,
) -> int:
    """Fetch a run's (or a span's) hourly intensity from the site's provider into the ledger."""
    from wattlog.accounting.ledger.engine import make_engine
    from wattlog.accounting.ledger.store import Ledger

    chosen = _provider_site(site, sites_file)
    engine = make_engine(db)
    try:
        ledger = Ledger(engine)
        start_s, end_s = _span(ledger, run, start, end)
        context = ProviderContext(base_url=provider_url, progress=_progress)
        report = fetch_into_ledger(
            ledger, chosen.intensity_source, start_s, end_s, context, chosen.wue_offsite_l_per_kwh
        )
    finally:
        engine.dispose()
    print(f"stored {report.stored} hours in ledger series {report.series}")
    if report.water_stored:
        print(f"stored {report.water_stored} hours of grid water in ledger series water:{report.series}")
    if report.refused:
        print(report.refused, file=sys.stderr)
    if report.missing:
        first, last = iso_hour(report.missing[0]), iso_hour(report.missing[-1])
        print(
            f"{len(report.missing)} hours ({first} .. {last}) missing from {chosen.intensity_source.source}: "
            f"tables give them the site's constant, labelled",
            file=sys.stderr,
        )
        return 1
    return 0


def hours(
    site: _SiteOption,
    start: _TimeOption = None,
    end: _TimeOption = None,
    run: Annotated[str | None, typer.Option("--run", help="The hours of this run (name or id).")] = None,
    db: DbOption = None,
    sites_file: SitesFileOption = None,
    fmt: FormatOption = TableFormat.RICH,
) -> None:
    """Each hour's intensity and where it comes from, as tables use it (from the ledger, offline)."""
    from wattlog.accounting.ledger.engine import make_engine
    from wattlog.accounting.ledger.store import Ledger

    chosen = _provider_site(site, sites_file)
    engine = make_engine(db, create=False)
    try:
        ledger = Ledger(engine)
        start_s, end_s = _span(ledger, run, start, end)
        intensity = chosen.open_intensity(ledger)
        water = open_grid_water(chosen, ledger)
    finally:
        engine.dispose()
    assert isinstance(intensity, CachedIntensity)  # every provider source opens one
    cells = []
    for hour in range(hour_start_s(start_s), int(end_s), HOUR_S):
        where, wet = intensity.provenance_at(hour), water.provenance_at(hour)
        cells.append(
            [
                iso_hour(hour),
                format_quantity(intensity.kg_per_kwh_at(hour), ".4g"),
                "yes" if where.estimated else "no",
                where.source,
                format_quantity(water.l_per_kwh_at(hour), ".4g"),
                format_quantity(chosen.wue_offsite_l_per_kwh, ".4g"),
                wet.source,
            ]
        )
    notes = [intensity.label, "Grid water: off-site L/kWh from the hour's fuel mix; Site WUE: the constant"]
    headers = [
        "Hour (UTC)",
        "kg CO2e/kWh",
        "Estimated",
        "Source",
        "Grid water L/kWh",
        "Site WUE",
        "Water source",
    ]
    show(render_grid(headers, cells, notes, fmt, right={1, 4, 5}))


def forecast(
    site: _SiteOption,
    job_hours: Annotated[int, typer.Option("--hours", min=1, help="The job's length, whole hours.")],
    power_kw: Annotated[
        float | None,
        typer.Option("--power-kw", min=0.0, help="The job's steady IT power, kW (for tonnes saved)."),
    ] = None,
    sites_file: SitesFileOption = None,
    provider_url: _UrlOption = None,
    fmt: FormatOption = TableFormat.RICH,
) -> None:
    """The provider's forecast for the site and the cleanest start for a job of N hours."""
    chosen = _provider_site(site, sites_file)
    ref = chosen.intensity_source
    context = ProviderContext(base_url=provider_url, progress=_progress)
    fetched = open_provider(ref.source, context).forecast(ref.zone)
    values = dict(fetched.series.kg_per_kwh_by_hour)
    if not values:
        raise ConfigError(f"{ref.source} gives no forecast for zone {ref.zone}")
    pue = bounds(chosen.pue)[1]  # a range: the worse case
    choice = cleanest_window(values, job_hours, power_kw=power_kw, pue=float(pue))
    window = range(choice.start_s, choice.start_s + job_hours * HOUR_S, HOUR_S)
    cells = [[iso_hour(h), f"{v:.4g}", "cleanest" if h in window else ""] for h, v in sorted(values.items())]
    saved = "-" if choice.saved_t is None else f"{choice.saved_t:.4g} t CO2e"
    notes = [
        f"start at {iso_hour(choice.start_s)}: mean {choice.mean_kg_per_kwh:.4g} kg/kWh against "
        f"{choice.now_mean_kg_per_kwh:.4g} from {iso_hour(choice.now_start_s)} "
        f"({choice.saved_fraction:.1%} less; saves {saved}"
        + (
            f" at {power_kw:g} kW IT, PUE {pue:g})"
            if power_kw is not None
            else "; give --power-kw for tonnes)"
        ),
        f"forecast: {fetched.series.origin}",
    ]
    show(render_grid(["Hour (UTC)", "kg CO2e/kWh", "Window"], cells, notes, fmt, right={1}))


def register(app: typer.Typer) -> None:
    """Add `wattlog intensity fetch|hours|forecast` to the root app."""
    group = typer.Typer(
        name="intensity",
        help="Live grid carbon intensity, cached in the ledger (providers: `intensity fetch --help`).",
        no_args_is_help=True,
        **PLAIN_HELP,
    )
    # the providers are listed on `fetch`: the root help lists this group's one line, not every provider
    group.command("fetch", help=f"{fetch.__doc__} Providers: {_PROVIDERS_HELP}.")(fetch)
    group.command("hours")(hours)
    group.command("forecast")(forecast)
    app.add_typer(group)
