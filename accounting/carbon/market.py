"""A site's contractual instruments and residual mix: what market-based Scope 2 reads.

GHG Protocol Scope 2 dual reporting puts a market-based figure beside the location-based
one: energy covered by contractual instruments (PPAs, energy attribute certificates,
a supplier's specific factor) takes the instrument's emission factor, the rest takes the
residual mix (the grid once others' claims are removed). A market file names them per site,
each figure with its source (wattlog ships no residual mixes: they are published per country
and year, e.g. AIB's European Residual Mixes, Green-e's for the US)::

    [sites.mylab.market]
    residual_mix_kg_per_kwh = 0.45
    residual_mix_source = "AIB European Residual Mixes 2025, Germany, Table 2"

    [[sites.mylab.market.instruments]]
    id = "ppa-wind-2026"             # unique: an instrument is used once
    kind = "ppa"                     # ppa, certificate or supplier
    mwh = 500.0
    kg_per_kwh = 0.0
    source = "PPA with a wind farm, contract 2025-17"
    vintage = 2026                   # the calendar year it covers (annual matching) ...
    # start = "2026-03-29T00:00Z"    # ... or the hours it was generated in (hourly matching):
    # end = "2026-03-29T03:00Z"      # its MWh spread evenly over [start, end)
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from wattlog.accounting.carbon.intensity.hours import timestamp_s
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError


class InstrumentKind(StrEnum):
    """What a contractual instrument is."""

    PPA = "ppa"
    CERTIFICATE = "certificate"
    SUPPLIER = "supplier"


@dataclass(frozen=True, slots=True)
class Instrument:
    """One contractual instrument.

    Attributes:
        id: Unique name; an instrument's MWh are used once across every run it is applied to.
        kind: PPA, certificate or supplier-specific factor.
        mwh: Energy it covers, MWh (> 0).
        kg_per_kwh: Its emission factor (0 for wind or solar).
        source: The contract or registry entry.
        vintage: The calendar year (UTC) of its generation; annual matching applies it to that year.
        start_s: With `end_s`: the hours it was generated in (Unix s, on the hour), for hourly matching.
        end_s: End of those hours (exclusive).
    """

    id: str
    kind: InstrumentKind
    mwh: float
    kg_per_kwh: float
    source: str
    vintage: int
    start_s: int | None = None
    end_s: int | None = None

    def __post_init__(self) -> None:
        who = f"instrument {self.id!r}"
        if not self.id.strip():
            raise ConfigError("an instrument needs an id")
        if not (math.isfinite(self.mwh) and self.mwh > 0):
            raise ConfigError(f"{who}: mwh must be > 0, not {self.mwh}")
        if not (math.isfinite(self.kg_per_kwh) and self.kg_per_kwh >= 0):
            raise ConfigError(f"{who}: kg_per_kwh must be >= 0, not {self.kg_per_kwh}")
        if not self.source.strip():
            raise ConfigError(f"{who}: every instrument needs a source (the contract or registry entry)")
        if (self.start_s is None) != (self.end_s is None):
            raise ConfigError(f"{who}: give both start and end, or neither")
        if self.start_s is not None and self.end_s is not None:
            if self.start_s % HOUR_S or self.end_s % HOUR_S or self.end_s <= self.start_s:
                raise ConfigError(f"{who}: start and end must be on the hour, end after start")
            if {_year(self.start_s), _year(self.end_s - 1)} != {self.vintage}:
                raise ConfigError(f"{who}: its hours lie outside its vintage {self.vintage}")

    @property
    def hours(self) -> range | None:
        """The hour starts it was generated in (None: a whole-year instrument)."""
        if self.start_s is None or self.end_s is None:
            return None
        return range(self.start_s, self.end_s, HOUR_S)


@dataclass(frozen=True, slots=True)
class Market:
    """A site's market-based inputs.

    Attributes:
        residual_mix_kg_per_kwh: The residual mix's emission factor.
        residual_mix_source: Where it is published.
        instruments: The site's instruments (ids unique).
    """

    residual_mix_kg_per_kwh: float
    residual_mix_source: str
    instruments: Sequence[Instrument] = ()

    def __post_init__(self) -> None:
        if not (math.isfinite(self.residual_mix_kg_per_kwh) and self.residual_mix_kg_per_kwh >= 0):
            raise ConfigError(f"residual_mix_kg_per_kwh must be >= 0, not {self.residual_mix_kg_per_kwh}")
        if not self.residual_mix_source.strip():
            raise ConfigError("a residual mix needs its source (residual_mix_source)")
        ids = [i.id for i in self.instruments]
        doubled = sorted({i for i in ids if ids.count(i) > 1})
        if doubled:
            raise ConfigError(
                f"instrument id(s) {', '.join(doubled)} appear twice: an instrument is used once"
            )


def load_markets(path: Path | str) -> dict[str, Market]:
    """Read ``[sites.NAME.market]`` tables from a TOML file.

    Raises:
        ConfigError: Unreadable file, bad TOML or an invalid instrument; the message names the file.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read market file {path}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    sites = data.get("sites")
    if not isinstance(sites, dict):
        raise ConfigError(f"{path}: no [sites.NAME.market] tables")
    try:
        return {
            name.lower(): _market(table.get("market")) for name, table in sites.items() if "market" in table
        }
    except KeyError as error:
        raise ConfigError(f"{path}: a market table or instrument lacks {error.args[0]!r}") from None
    except (ConfigError, TypeError, ValueError) as error:
        raise ConfigError(f"{path}: {error}") from None


def _market(table: Any) -> Market:
    if not isinstance(table, dict):
        raise ConfigError("[sites.NAME.market] must be a table")
    rows = table.get("instruments", [])
    return Market(
        float(table["residual_mix_kg_per_kwh"]),
        str(table.get("residual_mix_source", "")),
        tuple(_instrument(row) for row in rows),
    )


def _instrument(row: Mapping[str, Any]) -> Instrument:
    start = timestamp_s(str(row["start"])) if "start" in row else None
    end = timestamp_s(str(row["end"])) if "end" in row else None
    vintage = int(row["vintage"]) if "vintage" in row else (_year(start) if start is not None else None)
    if vintage is None:
        raise ConfigError(
            f"instrument {row.get('id')!r}: give its vintage (a year) or its hours (start, end)"
        )
    try:
        kind = InstrumentKind(str(row.get("kind", "certificate")))
    except ValueError:
        raise ConfigError(
            f"instrument {row.get('id')!r}: kind must be ppa, certificate or supplier"
        ) from None
    return Instrument(
        str(row["id"]),
        kind,
        float(row["mwh"]),
        float(row["kg_per_kwh"]),
        str(row.get("source", "")),
        vintage,
        int(start) if start is not None else None,
        int(end) if end is not None else None,
    )


def _year(t_s: float) -> int:
    return datetime.fromtimestamp(t_s, UTC).year
