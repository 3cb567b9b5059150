"""What an audit bundle holds beside the ledger rows, and how the verifier reads it back.

- Power and counter series per device (accounting.publishing.audit.series): the rows themselves, said how
  in series.json and written as CSV by `wattlog audit series`, at the ledger's resolution: the
  ledger keeps energy per device per flush (the agent's `flush_s`, 10 s by default), not samples,
  so that is the finest series it holds; an agent run with ``flush_s=1`` gives a 1 Hz series
  (bench/audit_size.py prints the size of a bundle at 1 s rows).
- The intensity the row used: its label, a constant, or each hour the run used energy in,
  with where each hour's value comes from (a series stored in the ledger's catalog keeps the
  source it was stored with).
- The site's figures and sources, the sensor profiles (the data files the bands read), the
  run's configuration and the table options the row was printed with, and versions.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from importlib import metadata, resources
from typing import Any

from wattlog.accounting.carbon.intensity.base import IntensitySource
from wattlog.accounting.carbon.sites import Site
from wattlog.accounting.devices import Overhead
from wattlog.accounting.publishing.footprint import WaterConvention
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.accounting.publishing.validity import ValidityLimits
from wattlog.accounting.ranges import Quantity, Range
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError

PROFILE_FILES = ("nvidia.toml", "amd.toml", "gaudi.toml", "node.toml", "unknown_board.toml")
"""The sensor-profile data files (wattlog.telemetry.sensors) whose numbers the bands read."""
SITE_FIGURES = ("pue", "wue_onsite_l_per_kwh", "wue_offsite_l_per_kwh", "carbon_intensity_kg_per_kwh")
"""A site's figures (site.json)."""


def quantity_doc(value: Quantity) -> float | list[float]:
    """A quantity as JSON: a number, or [min, max] for a range."""
    return [value.lo, value.hi] if isinstance(value, Range) else float(value)


def _quantity(raw: float | list[float]) -> Quantity:
    return Range(float(raw[0]), float(raw[1])) if isinstance(raw, list) else float(raw)


def site_doc(site: Site) -> dict[str, Any]:
    """The site's figures, sources and description (its intensity goes to intensity.json)."""
    return {
        "name": site.name,
        **{name: quantity_doc(getattr(site, name)) for name in SITE_FIGURES},
        "sources": dict(site.sources),
        "description": site.description,
    }


def intensity_doc(intensity: IntensitySource, hours: Iterable[int]) -> dict[str, Any]:
    """The intensity the row used: a constant, or each hour the rows started in with its provenance."""
    constant = intensity.constant_kg_per_kwh
    doc: dict[str, Any] = {"label": intensity.label, "constant": None, "hours": {}, "provenance": {}}
    if constant is not None:
        return doc | {"constant": quantity_doc(constant)}
    provenance = getattr(intensity, "provenance", {})
    for hour in sorted(hours):
        try:
            doc["hours"][str(hour)] = quantity_doc(intensity.kg_per_kwh_at(float(hour)))
        except ConfigError:  # an hour the series lacks stays missing: the gate names it
            continue
        if (found := provenance.get(hour)) is not None:
            doc["provenance"][str(hour)] = {"source": found.source, "estimated": found.estimated}
    return doc


@dataclass(frozen=True, slots=True)
class BundledIntensity:
    """The intensity as the bundle recorded it (an IntensitySource read back by the verifier)."""

    label: str
    constant: Quantity | None
    hours: Mapping[int, Quantity]

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> BundledIntensity:
        """From intensity.json."""
        constant = None if doc["constant"] is None else _quantity(doc["constant"])
        return cls(doc["label"], constant, {int(h): _quantity(v) for h, v in doc["hours"].items()})

    @property
    def constant_kg_per_kwh(self) -> Quantity | None:
        """The constant, or None for an hourly series."""
        return self.constant

    def kg_per_kwh_at(self, t_s: float) -> Quantity:
        """The hour's value as bundled.

        Raises:
            ConfigError: The bundle has no value for that hour.
        """
        if self.constant is not None:
            return self.constant
        hour = int(t_s // HOUR_S) * HOUR_S
        if hour not in self.hours:
            raise ConfigError(f"{self.label}: no value bundled for the hour starting {hour}")
        return self.hours[hour]


def profiles_doc() -> dict[str, str]:
    """The sensor-profile data files, as shipped."""
    folder = resources.files("wattlog.telemetry.sensors")
    return {name: folder.joinpath(name).read_text(encoding="utf-8") for name in PROFILE_FILES}


def config_doc(
    run_config: Mapping[str, Any], options: TableOptions, overhead: Overhead | None
) -> dict[str, Any]:
    """The run's configuration and the options its row was printed with."""
    limits = options.validity or ValidityLimits()
    return {
        "run_config": dict(run_config),
        "convention": options.convention.value,
        "overhead": None if overhead is None else asdict(overhead),
        "validity": asdict(limits),
    }


def replay_options(
    site: Mapping[str, Any], intensity: Mapping[str, Any], config: Mapping[str, Any]
) -> TableOptions:
    """The table options rebuilt from the bundle alone (its site, intensity, overhead and gate)."""
    bundled = Site(
        site["name"],
        pue=_quantity(site["pue"]),
        wue_onsite_l_per_kwh=_quantity(site["wue_onsite_l_per_kwh"]),
        wue_offsite_l_per_kwh=_quantity(site["wue_offsite_l_per_kwh"]),
        carbon_intensity_kg_per_kwh=_quantity(site["carbon_intensity_kg_per_kwh"]),
        sources=site["sources"],
        description=site["description"],
    )
    overhead = config["overhead"]
    found = None if overhead is None else Overhead(**{**overhead, "band": _band(overhead["band"])})
    return TableOptions(
        catalog={bundled.name: bundled},
        site=bundled.name,
        intensity=BundledIntensity.of(intensity),
        convention=WaterConvention(config["convention"]),
        calibrations={} if found is None else {bundled.name: found},
        validity=ValidityLimits(**config["validity"]),
    )


def _band(raw: list[float] | None) -> tuple[float, float] | None:
    return None if raw is None else (float(raw[0]), float(raw[1]))


def versions_doc() -> dict[str, str]:
    """wattlog's, Python's and the database layer's versions, and the platform."""
    found = {"python": platform.python_version(), "platform": platform.platform()}
    for package in ("wattlog", "sqlalchemy", "sqlmodel"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "unknown (not installed)"
    return found
