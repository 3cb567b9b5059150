"""The footprint maths: the paper's formulas exactly, ranges, water conventions, hourly intensity."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from wattlog.accounting.carbon.intensity import ConstantIntensity, HourlySeries
from wattlog.accounting.carbon.sites import Site, get_site
from wattlog.accounting.it_energy import Energy, energy_label
from wattlog.accounting.publishing.footprint import (
    WaterConvention,
    co2_t,
    co2_t_hourly,
    facility_energy_mwh,
    footprint_for,
    water_kl,
)
from wattlog.accounting.ranges import Range
from wattlog.errors import ConfigError
from wattlog.records import EnergyFigure, Kind, Source

T0 = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())
MWH = 3.6e9  # joules


def energy(it_mwh: float, source: Source, band: Range | None = None, **changes: object) -> Energy:
    """A run's energy of `it_mwh` MWh from one figure of `source` (band: exact unless given)."""
    lo, hi = (band.lo, band.hi) if band is not None else (it_mwh, it_mwh)
    figure = EnergyFigure(Kind.NODE, source, it_mwh * MWH, lo * MWH, hi * MWH)
    return Energy((figure,), **changes)  # type: ignore[arg-type]


def test_design_reference_checks() -> None:
    # DESIGN.md: OLMo 2 7B 131 MWh x 1.2 x 0.332 -> 52 t; 13B 257 x 1.12 x 0.351 -> 101 t, x 3.10 -> 892 kL.
    assert round(co2_t(131, 1.2, 0.332)) == 52
    assert round(co2_t(257, 1.12, 0.351)) == 101
    assert round(water_kl(257, 1.12, 0.0, 3.10)) == 892
    llama = water_kl(74, 1.1, 0.0, Range(1.29, 4.26))
    assert isinstance(llama, Range)
    assert (round(llama.lo), round(llama.hi)) == (105, 347)


def test_pue_multiplies_once() -> None:
    assert facility_energy_mwh(10.0, 1.5) == 15.0
    assert co2_t(10.0, 1.5, 1.0) == 15.0
    assert water_kl(10.0, 1.5, 0.0, 1.0) == 15.0


def test_water_conventions_differ_only_in_onsite_term() -> None:
    paper = water_kl(100.0, 1.2, 1.0, 2.0, WaterConvention.PAPER)
    green = water_kl(100.0, 1.2, 1.0, 2.0, WaterConvention.GREEN_GRID)
    assert paper == pytest.approx(100 * 1.2 * 3.0)
    assert green == pytest.approx(100 * 1.0 + 100 * 1.2 * 2.0)
    # With no on-site water (the paper's sites) both agree.
    assert water_kl(100.0, 1.2, 0.0, 2.0) == water_kl(100.0, 1.2, 0.0, 2.0, WaterConvention.GREEN_GRID)


def test_ranges_propagate_as_min_max() -> None:
    result = co2_t(Range(9.0, 11.0), Range(1.1, 1.2), Range(0.3, 0.4))
    assert isinstance(result, Range)
    assert (result.lo, result.hi) == pytest.approx((9 * 1.1 * 0.3, 11 * 1.2 * 0.4))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: facility_energy_mwh(1.0, 0.99), "PUE is 0.99, below 1"),
        (lambda: co2_t(1.0, 1.1, -0.1), "carbon intensity is -0.1"),
        (lambda: water_kl(1.0, 1.1, -1.0, 0.0), "WUE on-site is -1"),
        (lambda: water_kl(1.0, 1.1, 0.0, Range(-1.0, 1.0)), "WUE off-site is -1-1"),
        (lambda: co2_t(-1.0, 1.1, 0.3), "IT energy is -1"),
    ],
)
def test_bad_inputs_are_config_errors(call: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        call()  # type: ignore[operator]


def test_energy_label() -> None:
    assert energy_label([Source.SAMPLED, Source.COUNTER, "counter"]) == "counter+sampled"
    assert energy_label(["published"]) == "published"
    with pytest.raises(ConfigError, match="energy source label measured"):
        energy_label(["measured"])
    with pytest.raises(ConfigError):
        Energy((EnergyFigure(Kind.GPU, Source.COUNTER, MWH, MWH, MWH),), label="guessed")


def test_footprint_for_jupiter_reproduces_olmo_2_7b() -> None:
    fp = footprint_for(energy(131.0, Source.COUNTER), get_site("jupiter"))
    assert fp.facility_energy_j == pytest.approx(157.2 * MWH)
    assert isinstance(fp.co2_t, float) and round(fp.co2_t) == 52
    assert fp.water_kl == pytest.approx(131 * 1.2 * 1.29)
    assert fp.wue_l_per_kwh == 1.29
    assert fp.energy_source == "counter"
    assert fp.energy_band_j == Range.exact(131.0 * MWH)
    assert fp.convention is WaterConvention.PAPER
    assert not fp.hourly
    assert any("0.332" in note for note in fp.notes)


def test_footprint_keeps_band_and_split_and_intensity_override() -> None:
    run = energy(2.0, Source.SAMPLED, Range(1.9, 2.1), gpu_j=1.5 * MWH)
    fp = footprint_for(run, get_site("augusta"), intensity=ConstantIntensity(0.5, "contract"))
    assert fp.co2_t == pytest.approx(2.0 * 1.12 * 0.5)
    assert fp.energy_band_j == Range(1.9 * MWH, 2.1 * MWH)
    assert (fp.gpu_j, fp.host_j) == (1.5 * MWH, 0.5 * MWH)
    assert "contract" in fp.intensity_label


def test_hourly_intensity_weights_each_hours_energy(tmp_path: Path) -> None:
    path = tmp_path / "grid.csv"
    path.write_text(f"{T0},0.1\n{T0 + 3600},0.5\n", encoding="utf-8")
    series = HourlySeries.from_csv(path)
    by_hour = {T0: 3.0, T0 + 3600: 1.0}
    # A flat mean (0.3) would give 4 x 0.3 = 1.2 t; hour by hour it is 3 x 0.1 + 1 x 0.5 = 0.8 t.
    assert co2_t_hourly(by_hour, 1.0, series) == pytest.approx(0.8)
    site = Site(
        "lab", pue=1.5, wue_onsite_l_per_kwh=0, wue_offsite_l_per_kwh=1, carbon_intensity_kg_per_kwh=0.9
    )
    hours_j = {hour: mwh * MWH for hour, mwh in by_hour.items()}
    fp = footprint_for(energy(4.0, Source.COUNTER, by_hour_j=hours_j), site, intensity=series)
    assert fp.hourly
    assert fp.co2_t == pytest.approx(0.8 * 1.5)
    assert fp.intensity_kg_per_kwh == pytest.approx(0.2)  # energy-weighted mean
    assert any(f"hourly intensity from {path}" in note for note in fp.notes)


def test_hourly_accepts_datetime_keys_and_needs_energy_by_hour(tmp_path: Path) -> None:
    path = tmp_path / "grid.csv"
    path.write_text(f"{T0},0.1\n", encoding="utf-8")
    series = HourlySeries.from_csv(path)
    assert co2_t_hourly({datetime(2026, 1, 1): 2.0}, 1.0, series) == pytest.approx(0.2)
    with pytest.raises(ConfigError, match="needs the run's energy per hour"):
        footprint_for(energy(1.0, Source.COUNTER), get_site("world"), intensity=series)
    with pytest.raises(ConfigError, match="no value for the hour"):
        co2_t_hourly({T0 + 3600: 1.0}, 1.0, series)


def test_the_table_flag_overrides_the_series_a_site_names(tmp_path: Path) -> None:
    from wattlog.accounting.carbon.intensity import IntensityRef

    path = tmp_path / "grid.csv"
    path.write_text(f"{T0},0.1\n", encoding="utf-8")
    site = Site("lab", 1.5, 0, 1, 0.9, intensity_source=IntensityRef("csv", str(path)))
    own = footprint_for(energy(2.0, Source.COUNTER, by_hour_j={T0: 2.0 * MWH}), site)
    assert own.hourly and own.co2_t == pytest.approx(2.0 * 1.5 * 0.1)  # the site's series, not its 0.9
    given = footprint_for(energy(2.0, Source.COUNTER), site, intensity=ConstantIntensity(0.5, "x"))
    assert not given.hourly and given.co2_t == pytest.approx(2.0 * 1.5 * 0.5)


def test_a_range_valued_mean_intensity_pairs_the_ends_one_pue_end_produced(tmp_path: Path) -> None:
    """Hourly 0.3 kg/kWh at a site with PUE 1.1-1.3: CO2 and facility energy are both ranges, and
    their ends come from the same PUE end, so the mean intensity is 0.3 at both ends. Pairing the
    low end of one with the high end of the other (a mutation that survived, issue 38) read 0.25-0.35."""
    path = tmp_path / "grid.csv"
    path.write_text(f"{T0},0.3\n{T0 + 3600},0.3\n", encoding="utf-8")
    site = Site(
        "lab",
        pue=Range(1.1, 1.3),
        wue_onsite_l_per_kwh=0,
        wue_offsite_l_per_kwh=1,
        carbon_intensity_kg_per_kwh=0.9,
    )
    hours_j = {T0: 1.0 * MWH, T0 + 3600: 1.0 * MWH}
    fp = footprint_for(
        energy(2.0, Source.COUNTER, by_hour_j=hours_j), site, intensity=HourlySeries.from_csv(path)
    )
    co2 = Range.of(fp.co2_t)
    assert (co2.lo, co2.hi) == pytest.approx((0.66, 0.78))
    mean = Range.of(fp.intensity_kg_per_kwh)
    assert (mean.lo, mean.hi) == pytest.approx((0.3, 0.3))
