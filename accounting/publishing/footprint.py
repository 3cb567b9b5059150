"""The footprint maths: IT energy -> facility energy, CO2 and water (OLMo 2's formulas, kept exact).

    facility_energy_MWh = it_energy_MWh x PUE
    CO2_t               = it_energy_MWh x PUE x carbon_intensity_kg_per_kWh      (MWh x kg/kWh = t)
    water_kL (paper)    = it_energy_MWh x PUE x (WUE_onsite + WUE_offsite)       (MWh x L/kWh = kL)
    water_kL (Green Grid) = it_energy_MWh x WUE_onsite + facility_MWh x WUE_offsite

The paper multiplies both water terms by PUE (harmless there: its on-site WUE
is 0); the Green Grid defines on-site WUE per unit of IT energy. PUE multiplies
once. Every input may be a Range, and ranges propagate as (min, max). The
ledger stores IT energy; facility energy is derived here, never stored.

:class:`CarbonPath` is the one way CO2 is computed from a site: tables and DCGM rows
(:func:`footprint_for`), the integrations' live logs (:class:`LiveCarbon`) and the
Prometheus rules' `intensity_source` label (:func:`rule_intensity_label`) all go
through it, so a live figure and the table cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, overload

from wattlog.accounting.carbon.intensity import HourSplitter, IntensitySource, hour_start_s
from wattlog.accounting.carbon.intensity.base import RefreshingSource
from wattlog.accounting.carbon.sites import Site
from wattlog.accounting.it_energy import Energy
from wattlog.accounting.ranges import Quantity, Range, check_at_least
from wattlog.accounting.units import j_to_mwh
from wattlog.errors import ConfigError

if TYPE_CHECKING:
    from wattlog.accounting.ledger.store import Ledger


class WaterConvention(StrEnum):
    """How on-site water is charged."""

    PAPER = "paper"  # (onsite + offsite) x facility energy, as OLMo 2's Table 19
    GREEN_GRID = "green-grid"  # onsite x IT energy + offsite x facility energy

    @property
    def description(self) -> str:
        """The formula in words, for table footnotes."""
        if self is WaterConvention.PAPER:
            return "IT energy x PUE x (WUE on-site + WUE off-site), the OLMo 2 paper's convention"
        return "IT energy x WUE on-site + IT energy x PUE x WUE off-site, The Green Grid's convention"


@overload
def facility_energy_mwh(it_energy_mwh: float, pue: float) -> float: ...
@overload
def facility_energy_mwh(it_energy_mwh: Quantity, pue: Quantity) -> Quantity: ...
def facility_energy_mwh(it_energy_mwh: Quantity, pue: Quantity) -> Quantity:
    """Facility energy from IT energy: IT x PUE.

    >>> facility_energy_mwh(74.0, 1.1)
    81.4
    """
    check_at_least(pue, 1.0, "PUE", "PUE is facility energy / IT energy, so it is at least 1")
    check_at_least(it_energy_mwh, 0.0, "IT energy", "energy cannot be negative")
    return it_energy_mwh * pue


@overload
def co2_t(it_energy_mwh: float, pue: float, intensity_kg_per_kwh: float) -> float: ...
@overload
def co2_t(it_energy_mwh: Quantity, pue: Quantity, intensity_kg_per_kwh: Quantity) -> Quantity: ...
def co2_t(it_energy_mwh: Quantity, pue: Quantity, intensity_kg_per_kwh: Quantity) -> Quantity:
    """Emissions in tonnes CO2e: IT energy x PUE x intensity (MWh x kg/kWh = t).

    >>> round(co2_t(131.0, 1.2, 0.332), 2)
    52.19
    """
    check_at_least(intensity_kg_per_kwh, 0.0, "carbon intensity", "carbon intensity cannot be negative")
    return facility_energy_mwh(it_energy_mwh, pue) * intensity_kg_per_kwh


@overload
def water_kl(
    it_energy_mwh: float,
    pue: float,
    wue_onsite_l_per_kwh: float,
    wue_offsite_l_per_kwh: float,
    convention: WaterConvention = ...,
) -> float: ...
@overload
def water_kl(
    it_energy_mwh: Quantity,
    pue: Quantity,
    wue_onsite_l_per_kwh: Quantity,
    wue_offsite_l_per_kwh: Quantity,
    convention: WaterConvention = ...,
) -> Quantity: ...
def water_kl(
    it_energy_mwh: Quantity,
    pue: Quantity,
    wue_onsite_l_per_kwh: Quantity,
    wue_offsite_l_per_kwh: Quantity,
    convention: WaterConvention = WaterConvention.PAPER,
) -> Quantity:
    """Water consumed in kilolitres (MWh x L/kWh = kL).

    >>> water_kl(74.0, 1.1, 0.0, Range(1.29, 4.26)).format(".0f")
    '105-347'
    """
    for value, name in ((wue_onsite_l_per_kwh, "WUE on-site"), (wue_offsite_l_per_kwh, "WUE off-site")):
        check_at_least(value, 0.0, name, "water use cannot be negative")
    facility = facility_energy_mwh(it_energy_mwh, pue)
    if convention is WaterConvention.PAPER:
        return facility * (wue_onsite_l_per_kwh + wue_offsite_l_per_kwh)
    return it_energy_mwh * wue_onsite_l_per_kwh + facility * wue_offsite_l_per_kwh


def co2_t_hourly(
    energy_by_hour_mwh: Mapping[int, float] | Mapping[datetime, float],
    pue: Quantity,
    intensity: IntensitySource,
) -> Quantity:
    """Emissions summed hour by hour: each hour's IT energy x PUE x that hour's intensity.

    Args:
        energy_by_hour_mwh: Hour start (Unix s, or a datetime; naive means UTC) -> IT energy, MWh.
        pue: Power usage effectiveness.
        intensity: Where each hour's intensity comes from.

    Returns:
        Tonnes CO2e (a Range if PUE or any intensity is one).

    Raises:
        ConfigError: The intensity has no value for one of the hours.
    """
    total: Quantity = 0.0
    for hour, energy_mwh in energy_by_hour_mwh.items():
        total = total + co2_t(energy_mwh, pue, intensity.kg_per_kwh_at(hour_start_s(hour)))
    return total


@dataclass(frozen=True, slots=True)
class CarbonPath:
    """CO2 = IT energy x PUE x intensity, constant or hour by hour: the one path every CO2 figure takes.

    Attributes:
        pue: Power usage effectiveness.
        intensity: Where the intensity comes from.
    """

    pue: Quantity
    intensity: IntensitySource

    @classmethod
    def of(
        cls,
        site: Site,
        intensity: IntensitySource | None = None,
        ledger: Ledger | None = None,
        *,
        live: bool = False,
    ) -> CarbonPath:
        """The path of `site`: its PUE and the intensity it names (or `intensity`, which overrides it).

        `live`: the path of a run's live logs, which re-reads hours stored after it opened.

        Raises:
            ConfigError: The site's series cannot be read (a stored one needs `ledger`).
        """
        return cls(site.pue, intensity if intensity is not None else site.open_intensity(ledger, live=live))

    @property
    def hourly(self) -> bool:
        """Whether CO2 needs the energy of each hour."""
        return self.intensity.constant_kg_per_kwh is None

    def co2_t(self, it_mwh: Quantity, by_hour_mwh: Mapping[int, float] | None = None) -> Quantity:
        """Tonnes CO2e of `it_mwh` (IT energy, MWh; `by_hour_mwh` its split by hour, for an hourly intensity).

        Raises:
            ConfigError: An hourly intensity without energy per hour, or an hour the series lacks.
        """
        constant = self.intensity.constant_kg_per_kwh
        if constant is not None:
            return co2_t(it_mwh, self.pue, constant)
        if by_hour_mwh is None:
            raise ConfigError(
                f"{self.intensity.label} needs the run's energy per hour; pass Energy(by_hour_j=...)"
            )
        return co2_t_hourly(by_hour_mwh, self.pue, self.intensity)


@dataclass(slots=True)
class LiveCarbon:
    """The CO2 path fed with a running total (what live logs read): same hours, same CO2 as the table.

    Each reading's increase is split into clock hours as the ledger's rows are, so an
    hourly intensity weighs each hour's energy, as :func:`footprint_for` does.

    Attributes:
        path: The site's CO2 path.
        hours: The running total's energy by hour (started when the total was 0).
    """

    path: CarbonPath
    hours: HourSplitter

    def co2_t(self, t_s: float, total_j: float) -> Quantity:
        """Tonnes CO2e of `total_j` (joules since the start) read at `t_s` (Unix s)."""
        by_hour = self.hours.add(t_s, total_j)
        if isinstance(self.path.intensity, RefreshingSource):  # hours stored since: the table's hours
            self.path.intensity.refresh(by_hour)
        return self.path.co2_t(j_to_mwh(total_j), by_hour)


def rule_intensity_label(site: Site) -> str:
    """The `intensity_source` label of the site's Prometheus intensity rule: what its figure is and whence.

    A static rule publishes the site's constant; a site whose tables use an hourly series
    says so, naming the series, so a panel never passes the constant off as the series.
    """
    clause = site.source("carbon_intensity_kg_per_kwh").split(";")[0].strip()
    ref = site.intensity_source
    if ref.source == "constant":
        return f"constant: {clause}"
    return f"hourly {ref.describe()} (tables); constant: {clause} (this rule)"


@dataclass(frozen=True, slots=True)
class Footprint:
    """Energy, emissions and water of one run at one site, with every label a table needs.

    Energy is in joules, as measured; MWh (the paper's unit) is what a table prints,
    so the renderers convert, not the footprint.

    Attributes:
        site: Site name.
        it_energy_j: IT energy as measured, J.
        energy_source: Its source label.
        energy_band_j: Its uncertainty band, J.
        pue: Power usage effectiveness used.
        facility_energy_j: IT energy x PUE, J (derived).
        intensity_kg_per_kwh: The constant intensity, or for an hourly series the
            energy-weighted mean (co2 / facility energy).
        intensity_label: Where the intensity comes from.
        hourly: Whether emissions were summed hour by hour.
        co2_t: Emissions, tonnes CO2e.
        wue_onsite_l_per_kwh: On-site WUE used.
        wue_offsite_l_per_kwh: Off-site WUE used.
        water_kl: Water consumed, kL.
        convention: The water convention.
        gpu_j: GPU energy, J, where measured apart.
        host_j: Rest-of-node energy (CPU, DRAM), J, where measured apart.
        notes: Caveats for the table's footnotes.
    """

    site: str
    it_energy_j: float
    energy_source: str
    energy_band_j: Range
    pue: Quantity
    facility_energy_j: Quantity
    intensity_kg_per_kwh: Quantity
    intensity_label: str
    hourly: bool
    co2_t: Quantity
    wue_onsite_l_per_kwh: Quantity
    wue_offsite_l_per_kwh: Quantity
    water_kl: Quantity
    convention: WaterConvention
    gpu_j: float | None = None
    host_j: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def wue_l_per_kwh(self) -> Quantity:
        """On-site plus off-site WUE, as Table 19 prints it."""
        return self.wue_onsite_l_per_kwh + self.wue_offsite_l_per_kwh


def footprint_for(
    energy: Energy,
    site: Site,
    *,
    intensity: IntensitySource | None = None,
    convention: WaterConvention = WaterConvention.PAPER,
    ledger: Ledger | None = None,
) -> Footprint:
    """The footprint of `energy` drawn at `site`.

    Args:
        energy: IT energy with its label (and per-hour split for an hourly intensity).
        site: PUE, WUE and (unless `intensity` is given) the carbon intensity it names.
        intensity: Overrides the site's intensity, e.g. an HourlySeries.
        convention: How on-site water is charged.
        ledger: Where a site's stored series is read from.

    Returns:
        The footprint, its notes saying which intensity and convention were used.

    Raises:
        ConfigError: An hourly intensity without energy per hour, or hours the series lacks.
    """
    carbon = CarbonPath.of(site, intensity, ledger)
    source = carbon.intensity
    facility = facility_energy_mwh(energy.it_mwh, site.pue)
    emissions = carbon.co2_t(energy.it_mwh, energy.by_hour_mwh)
    notes = [f"site {site.name}: PUE and WUE from the site catalog"]
    constant = source.constant_kg_per_kwh
    mean_intensity = constant if constant is not None else _mean_intensity(emissions, facility)
    if carbon.hourly:
        notes.append(f"{source.label}: emissions summed hour by hour; the intensity shown is their mean")
    notes.append(f"carbon intensity: {source.label}")
    band_j = energy.band_j
    return Footprint(
        site=site.name,
        it_energy_j=energy.it_j,
        energy_source=energy.source,
        energy_band_j=band_j if band_j is not None else Range.exact(energy.it_j),
        pue=site.pue,
        facility_energy_j=site.pue * energy.it_j,
        intensity_kg_per_kwh=mean_intensity,
        intensity_label=source.label,
        hourly=carbon.hourly,
        co2_t=emissions,
        wue_onsite_l_per_kwh=site.wue_onsite_l_per_kwh,
        wue_offsite_l_per_kwh=site.wue_offsite_l_per_kwh,
        water_kl=water_kl(
            energy.it_mwh, site.pue, site.wue_onsite_l_per_kwh, site.wue_offsite_l_per_kwh, convention
        ),
        convention=convention,
        gpu_j=energy.gpu_j,
        host_j=energy.host_split_j,
        notes=tuple(notes),
    )


def _mean_intensity(emissions_t: Quantity, facility_mwh: Quantity) -> Quantity:
    """Energy-weighted mean intensity, kg/kWh; 0 when no energy was drawn."""
    if Range.of(facility_mwh).hi == 0:
        return 0.0
    if isinstance(emissions_t, Range) or isinstance(facility_mwh, Range):
        # Pair the ends: the same PUE end produced both, so their ratio is the intensity's end.
        e, f = Range.of(emissions_t), Range.of(facility_mwh)
        ratios = [x / y for x, y in ((e.lo, f.lo), (e.hi, f.hi)) if y > 0]
        return Range(min(ratios), max(ratios))
    return emissions_t / facility_mwh
