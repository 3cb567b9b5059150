"""The intensity registry: every source by name, so sites, the CLI and its help read one list.

A new source is one module exporting a :class:`~wattlog.accounting.carbon.intensity.base.RegisteredSource`
(or a sequence of them) and one entry point in the ``wattlog.intensity`` group: wattlog's own are
:data:`SOURCES`, registered in its pyproject.toml; a package registers its own the same way,
without editing wattlog. ``--intensity-format``'s help, "auto" detection and the names sites may
use all follow from :func:`registered`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from wattlog.accounting.carbon.intensity import constant, csv_file, eia930, electricitymaps, stored, tabular
from wattlog.accounting.carbon.intensity.base import (
    IntensityRef,
    IntensitySource,
    OpenContext,
    RegisteredSource,
)
from wattlog.accounting.carbon.intensity.live import cache
from wattlog.errors import ConfigError
from wattlog.plugins import EntryPoints, Plugin, installed_entry_points, load_group

SOURCES: Sequence[RegisteredSource] = (
    constant.SOURCE,
    csv_file.SOURCE,
    electricitymaps.DIRECT,
    electricitymaps.LCA,
    eia930.SOURCE,
    stored.SOURCE,
    *cache.SOURCES,
)
"""Every intensity source, in the order help lists them."""

INTENSITY_GROUP = "wattlog.intensity"
"""The entry-point group of intensity sources."""

BUILT_IN_SOURCES = {
    "constant": "wattlog.accounting.carbon.intensity.constant:SOURCE",
    "csv": "wattlog.accounting.carbon.intensity.csv_file:SOURCE",
    "electricitymaps": "wattlog.accounting.carbon.intensity.electricitymaps:DIRECT",
    "electricitymaps-lca": "wattlog.accounting.carbon.intensity.electricitymaps:LCA",
    "eia930": "wattlog.accounting.carbon.intensity.eia930:SOURCE",
    "ledger": "wattlog.accounting.carbon.intensity.stored:SOURCE",
    "live": "wattlog.accounting.carbon.intensity.live.cache:SOURCES",
}
"""SOURCES as pyproject.toml registers them in INTENSITY_GROUP (the same order)."""


@dataclass(frozen=True, slots=True)
class Registered:
    """Every intensity source with who registered it, and the entry points that failed.

    Attributes:
        sources: (source, origin): "built-in" or the package that brought it, with its version.
        failures: One line per entry point that did not load or is no source.
    """

    sources: tuple[tuple[RegisteredSource, str], ...]
    failures: tuple[str, ...] = ()


def registered(entry_points: EntryPoints | None = None) -> Registered:
    """The built-in sources, then those installed packages register (read once per process)."""
    return _registered() if entry_points is None else _collect(entry_points)


@lru_cache(maxsize=1)
def _registered() -> Registered:
    return _collect(installed_entry_points)


def _collect(entry_points: EntryPoints) -> Registered:
    loaded = load_group(INTENSITY_GROUP, BUILT_IN_SOURCES, entry_points)
    sources = [(source, "built-in") for source in SOURCES]
    failures = list(loaded.failures)
    for plugin in loaded.brought():
        _add(plugin, sources, failures)
    return Registered(tuple(sources), tuple(failures))


def _add(plugin: Plugin, sources: list[tuple[RegisteredSource, str]], failures: list[str]) -> None:
    """Add a plugin's source (or sources); a non-source or a taken name is a failure line."""
    items = plugin.loaded if isinstance(plugin.loaded, (list, tuple)) else [plugin.loaded]
    for item in items:
        if not isinstance(item, RegisteredSource):
            failures.append(f"{INTENSITY_GROUP} {plugin.name!r} from {plugin.origin}: not a RegisteredSource")
        elif any(item.name == s.name for s, _ in sources):
            failures.append(f"{INTENSITY_GROUP} {plugin.name!r} from {plugin.origin}: {item.name!r} is taken")
        else:
            sources.append((item, plugin.origin))


def _all() -> list[RegisteredSource]:
    return [source for source, _ in registered().sources]


AUTO = "auto"
FALLBACK_FORMAT = csv_file.SOURCE.name
"""The file format of a file no other source recognises."""


def names() -> list[str]:
    """The names of every registered source."""
    return [s.name for s in _all()]


def file_formats() -> list[str]:
    """The names of the sources that read a file, "auto" first."""
    return [AUTO, *(s.name for s in _all() if s.reads_file)]


def formats_help() -> str:
    """E.g. "auto, csv (timestamp,kg_co2_per_kwh CSV), ...", for ``--intensity-format``."""
    described = [f"{s.name} ({s.description})" for s in _all() if s.reads_file]
    return ", ".join([f"{AUTO} (from the header)", *described])


def by_name(name: str) -> RegisteredSource:
    """The source registered as `name`.

    Raises:
        ConfigError: No such source; the message lists the known names.
    """
    for source in _all():
        if source.name == name:
            return source
    raise ConfigError(f"unknown intensity source {name!r}: use {', '.join(names())}")


def detect_format(path: Path | str) -> str:
    """The name of the file source whose header `path` has ("csv" when none claims it)."""
    header = tabular.header(path)
    for source in _all():
        if source.reads_file and source.sniff is not None and source.sniff(header):
            return source.name
    return FALLBACK_FORMAT


def open_intensity(ref: IntensityRef, context: OpenContext | None = None) -> IntensitySource:
    """Open the source `ref` names.

    Raises:
        ConfigError: Unknown source, or a series it cannot read (the message says which).
        LedgerError: A stored series that is not in the ledger.
    """
    return by_name(ref.source).open(ref, context or OpenContext())


def read_intensity(path: Path | str, fmt: str = AUTO, *, authority: str | None = None) -> IntensitySource:
    """Read an hourly file; `fmt` is "auto" or a file source's name (see :func:`file_formats`).

    Raises:
        ConfigError: An unknown format, or a file it cannot read.
    """
    if fmt not in file_formats():
        raise ConfigError(f"unknown intensity format {fmt!r}: use {', '.join(file_formats())}")
    fmt = detect_format(path) if fmt == AUTO else fmt
    return open_intensity(IntensityRef(fmt, str(path), authority or ""))
