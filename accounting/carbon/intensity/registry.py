"""The intensity registry: every source by name, so sites, the CLI and its help read one list.

A new source is one module exporting a :class:`~wattlog.accounting.carbon.intensity.base.RegisteredSource`
and one entry in :data:`SOURCES`; ``--intensity-format``'s help, "auto" detection and the
names sites may use all follow from it.
"""

from __future__ import annotations

from collections.abc import Sequence
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

AUTO = "auto"
FALLBACK_FORMAT = csv_file.SOURCE.name
"""The file format of a file no other source recognises."""


def names() -> list[str]:
    """The names of every registered source."""
    return [s.name for s in SOURCES]


def file_formats() -> list[str]:
    """The names of the sources that read a file, "auto" first."""
    return [AUTO, *(s.name for s in SOURCES if s.reads_file)]


def formats_help() -> str:
    """E.g. "auto, csv (timestamp,kg_co2_per_kwh CSV), ...", for ``--intensity-format``."""
    described = [f"{s.name} ({s.description})" for s in SOURCES if s.reads_file]
    return ", ".join([f"{AUTO} (from the header)", *described])


def by_name(name: str) -> RegisteredSource:
    """The source registered as `name`.

    Raises:
        ConfigError: No such source; the message lists the known names.
    """
    for source in SOURCES:
        if source.name == name:
            return source
    raise ConfigError(f"unknown intensity source {name!r}: use {', '.join(names())}")


def detect_format(path: Path | str) -> str:
    """The name of the file source whose header `path` has ("csv" when none claims it)."""
    header = tabular.header(path)
    for source in SOURCES:
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
