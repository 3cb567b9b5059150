"""The IntensitySource protocol and the hourly series every series source reads into.

With a series, emissions are computed hour by hour from the energy of each hour
(:func:`wattlog.accounting.publishing.footprint.co2_t_hourly`). Hours are keyed by their start
in Unix seconds (UTC).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from wattlog.accounting.carbon.intensity.hours import iso_hour
from wattlog.accounting.ranges import Quantity
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError

if TYPE_CHECKING:
    from wattlog.accounting.ledger.store import Ledger


class IntensitySource(Protocol):
    """Carbon intensity over time, in kg CO2e per kWh."""

    @property
    def label(self) -> str:
        """What the table says about where the intensity comes from."""
        ...

    @property
    def constant_kg_per_kwh(self) -> Quantity | None:
        """The one value if the intensity never changes, else None."""
        ...

    def kg_per_kwh_at(self, t_s: float) -> Quantity:
        """Intensity during the hour that contains Unix time `t_s`."""
        ...


@runtime_checkable
class RefreshingSource(Protocol):
    """An intensity whose stored hours may grow while a run goes (a provider's cache in the ledger)."""

    def refresh(self, hours: Iterable[int]) -> None:
        """Read again what is stored, before a figure over `hours` (hour starts, Unix s)."""
        ...


@dataclass(frozen=True, slots=True)
class HourProvenance:
    """Where one hour's intensity comes from.

    Attributes:
        source: The provider and its data source, e.g. "Electricity Maps (ENTSOE)".
        estimated: Whether the provider marked the hour estimated (or imputed).
    """

    source: str
    estimated: bool = False


@dataclass(frozen=True, slots=True)
class HourlySeries:
    """Intensity per hour; asking for an hour it lacks is an error, never a default.

    Attributes:
        kg_per_kwh_by_hour: Hour start (Unix s, UTC) -> kg CO2e per kWh.
        origin: The file (or stored series) it was read from (shown in tables).
        provenance: Hour start -> where that hour's value comes from and whether the provider
            marked it estimated (sources that say so: Electricity Maps, EIA-930).
    """

    kg_per_kwh_by_hour: Mapping[int, float] = field(default_factory=dict)
    origin: str = ""
    provenance: Mapping[int, HourProvenance] = field(default_factory=dict)

    @classmethod
    def from_csv(cls, path: Path | str) -> HourlySeries:
        """Read a ``timestamp,kg_co2_per_kwh`` file (:mod:`wattlog.accounting.carbon.intensity.csv_file`).

        Raises:
            ConfigError: Unreadable file, or a malformed line (named by its number).
        """
        from wattlog.accounting.carbon.intensity.csv_file import read_csv  # the reader builds this class

        return read_csv(path)

    @property
    def label(self) -> str:
        """E.g. "hourly intensity from grid.csv"."""
        return f"hourly intensity from {self.origin}"

    @property
    def constant_kg_per_kwh(self) -> None:
        """None: the intensity changes by the hour."""
        return None

    def kg_per_kwh_at(self, t_s: float) -> float:
        """The intensity of the hour containing `t_s`.

        Raises:
            ConfigError: The series has no value for that hour.
        """
        hour = int(t_s // HOUR_S) * HOUR_S
        try:
            return self.kg_per_kwh_by_hour[hour]
        except KeyError:
            raise ConfigError(
                f"{self.label} has no value for the hour starting {iso_hour(hour)}: "
                "extend the series to cover the run"
            ) from None


@dataclass(frozen=True, slots=True)
class IntensityRef:
    """Which registered source gives an intensity, and its series and zone where the source has them.

    Attributes:
        source: A name in the registry (:func:`wattlog.accounting.carbon.intensity.registry.names`);
            "constant" is the site's own figure.
        series: The file (file sources) or the stored series' name ("ledger"); "" for a constant.
        zone: The zone or balancing authority inside the series (EIA-930: e.g. "ERCO"); "" when
            the series holds one.
    """

    source: str = "constant"
    series: str = ""
    zone: str = ""

    def describe(self) -> str:
        """E.g. "eia930 EIA930_BALANCE.csv, zone ERCO"; "constant" for a constant."""
        where = f" {self.series}" if self.series else ""
        return f"{self.source}{where}{f', zone {self.zone}' if self.zone else ''}"


@dataclass(frozen=True, slots=True)
class OpenContext:
    """What a source may need to open its series.

    Attributes:
        constant: The site's own figure (the "constant" source).
        ledger: The ledger holding stored series (the "ledger" source).
        live: Read as a run goes (its logs): a provider's cache re-reads the ledger for hours
            stored after it was opened, so the live figure takes the table's hours.
    """

    constant: IntensitySource | None = None
    ledger: Ledger | None = None
    live: bool = False


@dataclass(frozen=True, slots=True)
class RegisteredSource:
    """One entry of the intensity registry: a name, what it reads, and how to open it.

    Attributes:
        name: The name sites and ``--intensity-format`` use.
        description: What it reads, for ``--help`` and errors.
        open: Opens the source named by a reference.
        reads_file: Whether ``series`` is a file (so ``--intensity FILE`` may pick it).
        sniff: Whether a CSV header (its column names) is this source's format, for "auto".
        fetches: Whether it is a live provider: its hours are fetched into the ledger (``wattlog
            intensity fetch``) and read back from there, so it needs a zone, not a series.
    """

    name: str
    description: str
    open: Callable[[IntensityRef, OpenContext], IntensitySource]
    reads_file: bool = False
    sniff: Callable[[Sequence[str]], bool] | None = None
    fetches: bool = False
