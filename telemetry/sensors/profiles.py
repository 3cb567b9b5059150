"""Sensor profiles: how each board family's power sensor behaves, read from its backend's data file.

Each backend ships a TOML file beside it (nvidia.toml) naming its board
families, the numbers the band needs, and the source of each. A board that no
file describes gets `unknown_board()`: a wide, labelled profile (unknown_board.toml),
never another vendor's numbers.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from wattlog.errors import ConfigError
from wattlog.telemetry.types import AnyVendor, SensorProfile, Vendor

_PACKAGE = "wattlog.telemetry.sensors"
VENDOR_PROFILES: Mapping[AnyVendor, str] = {
    Vendor.NVIDIA: "nvidia.toml",
    Vendor.AMD: "amd.toml",
    Vendor.HABANA: "gaudi.toml",
}
"""Each vendor's data file of board families (a vendor not listed: every board is unknown)."""
_NUMBERS = ("gain_low", "gain_high", "observed_fraction", "publication_period_s")


@dataclass(frozen=True, slots=True)
class ProfileTable:
    """The board families of one data file, in file order, and the one for boards none names.

    Attributes:
        families: (name patterns, profile) per family; a pattern matches a board name containing it.
        default: The profile of a board no family names.
    """

    families: tuple[tuple[tuple[str, ...], SensorProfile], ...]
    default: SensorProfile

    def for_board(self, name: str) -> SensorProfile:
        """The profile of the first family one of whose patterns `name` contains (case-insensitive)."""
        lowered = name.lower()
        for patterns, profile in self.families:
            if any(pattern.lower() in lowered for pattern in patterns):
                return profile
        return self.default


@functools.cache
def read_data(filename: str) -> Mapping[str, Any]:
    """The parsed data file `filename` beside the backends (families, boards; parsed once)."""
    return tomllib.loads(resources.files(_PACKAGE).joinpath(filename).read_text(encoding="utf-8"))


@functools.cache
def load_table(filename: str) -> ProfileTable:
    """The families of the data file `filename` beside the backends (parsed once, then cached).

    Raises:
        ConfigError: A family lacks a number, a number has no source, or `default` names no family.
    """
    data = read_data(filename)
    shared = data.get("sources", {})
    families = {key: _profile(filename, key, raw, shared) for key, raw in data.get("families", {}).items()}
    default_key = data.get("default", next(iter(families), ""))
    if default_key not in families:
        raise ConfigError(f"{filename}: default = {default_key!r} names no [families.*] table")
    named = tuple(
        (tuple(raw.get("names", ())), families[key])
        for key, raw in data["families"].items()
        if raw.get("names")
    )
    return ProfileTable(named, families[default_key])


def board_profile(vendor: AnyVendor, name: str) -> SensorProfile:
    """The profile of `vendor`'s board called `name`: its data file's family, else the vendor's default."""
    filename = VENDOR_PROFILES.get(vendor)
    return load_table(filename).for_board(name) if filename else unknown_board()


def unknown_board() -> SensorProfile:
    """The wide, labelled profile of an accelerator no data file describes."""
    return load_table("unknown_board.toml").default


def check_profile(profile: SensorProfile) -> SensorProfile:
    """`profile`, if its numbers can make a band.

    Raises:
        ConfigError: If the gain range is inverted or a fraction is out of (0, 1].
    """
    low, high = profile.gain_low, profile.gain_high
    if not low < 0 < high or low <= -1:
        raise ConfigError(f"{profile.family}: need -1 < gain_low < 0 < gain_high, got {low}, {high}")
    if not 0 < profile.observed_fraction <= 1:
        raise ConfigError(
            f"{profile.family}: observed_fraction must be in (0, 1], got {profile.observed_fraction}"
        )
    if profile.publication_period_s <= 0:
        raise ConfigError(
            f"{profile.family}: publication_period_s must be > 0, got {profile.publication_period_s}"
        )
    return profile


def _profile(filename: str, key: str, raw: Mapping[str, Any], shared: Mapping[str, str]) -> SensorProfile:
    """One family's profile; every number it gives must have a source."""
    missing = [name for name in _NUMBERS if name not in raw]
    if missing:
        raise ConfigError(f"{filename}: family {key!r} lacks {', '.join(missing)}")
    sources = {**shared, **raw.get("sources", {})}
    fields = {name: value for name, value in raw.items() if name not in ("names", "sources")}
    unsourced = [name for name in fields if name not in ("label", "known", "sensor") and name not in sources]
    if unsourced:
        raise ConfigError(f"{filename}: family {key!r} gives {', '.join(unsourced)} without a source")
    try:
        return check_profile(SensorProfile(family=key, **fields, sources=tuple(sorted(sources.items()))))
    except TypeError as error:
        raise ConfigError(f"{filename}: family {key!r}: {error}") from error
