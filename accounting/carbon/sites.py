"""Sites: where a run's energy was drawn, with PUE, WUE and carbon intensity, each sourced.

The built-in catalog (accounting/data/sites.toml) holds the OLMo 2 paper's
Jupiter and Augusta and a few grid averages; a user's TOML file adds sites or
overrides built-in ones by name. A user file looks like::

    [sites.mylab]
    description = "our cluster"
    pue = 1.3
    wue_onsite_l_per_kwh = 0.2
    wue_offsite_l_per_kwh = [1.2, 3.4]      # a range: [min, max]
    carbon_intensity_kg_per_kwh = 0.25

    [sites.mylab.sources]
    pue = "facility report 2025"

    [sites.mylab.intensity]                 # optional: hourly intensity instead of the constant
    source = "eia930"                       # a name from the intensity registry
    series = "EIA930_BALANCE_2026.csv"      # a file (relative to this one) or a stored series
    zone = "ERCO"                           # where the series holds several zones
    # or a live provider (electricitymaps-api, watttime, ukgrid, eia-api) and its zone: hours are
    # fetched into the ledger (`wattlog intensity fetch`) and read from there

A value without a source is labelled with the file it came from. A site with an
hourly source keeps its constant: it is what Prometheus rules publish (their
`intensity_source` label says so), as a static rule cannot follow the hours.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from wattlog.accounting.carbon.intensity import ConstantIntensity, IntensityRef, IntensitySource, OpenContext
from wattlog.accounting.carbon.intensity.registry import by_name, open_intensity
from wattlog.accounting.ranges import Quantity, check_at_least, parse_quantity
from wattlog.errors import ConfigError

if TYPE_CHECKING:
    from wattlog.accounting.ledger.store import Ledger

SITE_FIELDS = ("pue", "wue_onsite_l_per_kwh", "wue_offsite_l_per_kwh", "carbon_intensity_kg_per_kwh")
"""The sourced figures of a site, in the order tables show them."""


@dataclass(frozen=True, slots=True)
class Site:
    """One place where runs draw energy.

    Attributes:
        name: Key of the site in the catalog (lower case).
        pue: Power usage effectiveness, facility energy / IT energy (>= 1).
        wue_onsite_l_per_kwh: On-site water (cooling), litres per kWh.
        wue_offsite_l_per_kwh: Off-site water (electricity generation), litres per kWh.
        carbon_intensity_kg_per_kwh: Grid carbon intensity, kg CO2e per kWh.
        sources: Where each figure comes from, keyed by field name.
        description: What the site is.
        intensity_source: Which registered source gives its hourly intensity ("constant": the
            figure above), with its series and zone.
    """

    name: str
    pue: Quantity
    wue_onsite_l_per_kwh: Quantity
    wue_offsite_l_per_kwh: Quantity
    carbon_intensity_kg_per_kwh: Quantity
    sources: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    intensity_source: IntensityRef = IntensityRef()

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ConfigError("a site needs a non-empty name")
        who = f"site '{self.name}'"
        why_pue = "PUE is facility energy / IT energy, so it is at least 1"
        check_at_least(self.pue, 1.0, f"{who}: PUE", why_pue)
        for name in ("wue_onsite_l_per_kwh", "wue_offsite_l_per_kwh"):
            check_at_least(getattr(self, name), 0.0, f"{who}: {name}", "water use cannot be negative")
        check_at_least(
            self.carbon_intensity_kg_per_kwh,
            0.0,
            f"{who}: carbon_intensity_kg_per_kwh",
            "carbon intensity cannot be negative",
        )
        ref = self.intensity_source
        by_name(ref.source)  # an unknown source fails here, listing the known ones
        if by_name(ref.source).fetches:
            if not ref.zone:
                raise ConfigError(f"{who}: intensity provider {ref.source!r} needs a zone")
        elif ref.source != "constant" and not ref.series:
            raise ConfigError(
                f"{who}: intensity source {ref.source!r} needs a series (a file or stored name)"
            )

    def source(self, field_name: str) -> str:
        """The source of one figure ("unsourced" if none was given)."""
        return self.sources.get(field_name, "unsourced")

    @property
    def intensity(self) -> ConstantIntensity:
        """The site's constant carbon intensity as an intensity source."""
        return ConstantIntensity(self.carbon_intensity_kg_per_kwh, self.source("carbon_intensity_kg_per_kwh"))

    def open_intensity(self, ledger: Ledger | None = None, *, live: bool = False) -> IntensitySource:
        """The intensity the site names, opened through the registry (a stored series needs `ledger`).

        `live`: read as a run goes, so hours stored later are read too (:class:`OpenContext`).

        Raises:
            ConfigError: A series that cannot be read, or a stored one without a ledger.
            LedgerError: A stored series that is not in the ledger.
        """
        context = OpenContext(constant=self.intensity, ledger=ledger, live=live)
        return open_intensity(self.intensity_source, context)


def builtin_sites() -> dict[str, Site]:
    """The built-in catalog, read from the package's sites.toml."""
    text = resources.files("wattlog.accounting").joinpath("data/sites.toml").read_text(encoding="utf-8")
    return _sites_from_text(text, "built-in sites.toml", default_source=None, base_dir=None)


def load_sites(path: Path | str) -> dict[str, Site]:
    """Read user sites from a TOML file.

    Args:
        path: The file ([sites.NAME] tables, see the module docstring).

    Returns:
        The sites by name.

    Raises:
        ConfigError: Missing or unreadable file, bad TOML, or an invalid site; the
            message names the file.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read sites file {path}: {error.strerror or error}") from None
    return _sites_from_text(text, str(path), default_source=f"user sites file {path}", base_dir=path.parent)


def site_catalog(sites_file: Path | str | None = None) -> dict[str, Site]:
    """The built-in catalog merged with a user file (user sites win by name)."""
    catalog = builtin_sites()
    if sites_file is not None:
        catalog.update(load_sites(sites_file))
    return catalog


SITES_FILE_ENV = "WATTLOG_SITES_FILE"
"""A user sites file that runs may name sites from (the file tables take with ``--sites-file``)."""


def run_catalog(environ: Mapping[str, str] | None = None) -> dict[str, Site]:
    """The sites a run may name: the built-in catalog and ``$WATTLOG_SITES_FILE``'s (user sites win)."""
    path = (os.environ if environ is None else environ).get(SITES_FILE_ENV, "").strip()
    return site_catalog(path or None)


def get_site(name: str, catalog: Mapping[str, Site] | None = None) -> Site:
    """Look a site up by name (case-insensitive).

    Raises:
        ConfigError: Unknown site; the message lists the known names.
    """
    catalog = builtin_sites() if catalog is None else catalog
    site = catalog.get(name.strip().lower())
    if site is None:
        known = ", ".join(sorted(catalog))
        raise ConfigError(f"unknown site '{name}': known sites are {known} (add yours with --sites-file)")
    return site


def _sites_from_text(
    text: str, origin: str, default_source: str | None, base_dir: Path | None
) -> dict[str, Site]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{origin}: not valid TOML: {error}") from None
    tables = data.get("sites")
    if not isinstance(tables, dict) or not tables:
        raise ConfigError(f"{origin}: no [sites.NAME] tables found")
    try:
        return {
            name.lower(): _site(name.lower(), table, default_source, base_dir)
            for name, table in tables.items()
        }
    except ConfigError as error:
        raise ConfigError(f"{origin}: {error}") from None


def _site(name: str, table: object, default_source: str | None, base_dir: Path | None) -> Site:
    if not isinstance(table, dict):
        raise ConfigError(f"site '{name}': expected a table [sites.{name}]")
    allowed = {*SITE_FIELDS, "description", "sources", "intensity"}
    unknown = sorted(set(table) - allowed)
    if unknown:
        allowed_text = ", ".join(sorted(allowed))
        raise ConfigError(f"site '{name}': unknown key(s) {', '.join(unknown)}; allowed: {allowed_text}")
    missing = [f for f in SITE_FIELDS if f not in table]
    if missing:
        raise ConfigError(f"site '{name}': missing {', '.join(missing)}")
    sources = table.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise ConfigError(f"site '{name}': [sites.{name}.sources] must map field names to strings")
    if default_source is None and set(SITE_FIELDS) - set(sources):
        raise ConfigError(f"site '{name}': every built-in figure needs a source")
    values = {f: parse_quantity(table[f], f"site '{name}': {f}") for f in SITE_FIELDS}
    return Site(
        name=name,
        **values,
        sources={f: sources.get(f, default_source or "") for f in SITE_FIELDS},
        description=str(table.get("description", "")),
        intensity_source=_intensity_ref(name, table.get("intensity", {}), base_dir),
    )


def _intensity_ref(name: str, table: object, base_dir: Path | None) -> IntensityRef:
    """A site's [sites.NAME.intensity] table; a file series is taken relative to the sites file."""
    keys = {"source", "series", "zone"}
    if (
        not isinstance(table, dict)
        or set(table) - keys
        or not all(isinstance(v, str) for v in table.values())
    ):
        raise ConfigError(f"site '{name}': [sites.{name}.intensity] takes strings source, series and zone")
    ref = IntensityRef(table.get("source", "constant"), table.get("series", ""), table.get("zone", ""))
    if ref.series and base_dir is not None and by_name(ref.source).reads_file:
        ref = IntensityRef(ref.source, str(base_dir / ref.series), ref.zone)
    return ref
