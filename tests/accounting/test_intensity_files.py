"""Hourly intensity from Electricity Maps' hourly CSV and EIA-930 files: each hour keeps its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattlog.accounting.carbon.intensity import HourlySeries
from wattlog.accounting.carbon.intensity.eia930 import EIA_FACTORS
from wattlog.accounting.carbon.intensity.registry import detect_format, read_intensity
from wattlog.accounting.ledger import RunSpec
from wattlog.errors import ConfigError

H0 = 1_767_225_600  # 2026-01-01T00:00:00Z

EM_HEADER = (
    "Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),"
    "Carbon Intensity gCO₂eq/kWh (LCA),Low Carbon Percentage,Renewable Percentage,Data Source,"
    "Data Estimated,Data Estimation Method"
)
EM_ROWS = [
    "2026-01-01 00:00:00,Germany,Germany,DE,380.5,430.1,55.2,50.1,entsoe.eu,false,",
    "2026-01-01 01:00:00,Germany,Germany,DE,350.0,400.0,57.0,52.0,entsoe.eu,true,TIME_SLICER_AVERAGE",
]

EIA_HEADER = (
    "Balancing Authority,Data Date,Hour Number,Local Time at End of Hour,UTC Time at End of Hour,"
    "Demand Forecast (MW),Demand (MW),Net Generation (MW),Net Generation (MW) (Imputed),"
    "Net Generation (MW) from Coal,Net Generation (MW) from Natural Gas,Net Generation (MW) from Nuclear,"
    "Net Generation (MW) from All Petroleum Products,Net Generation (MW) from Hydropower and Pumped Storage,"
    "Net Generation (MW) from Solar,Net Generation (MW) from Wind,"
    "Net Generation (MW) from Other Fuel Sources,"
    "Net Generation (MW) from Unknown Fuel Sources"
)
EIA_ROWS = [
    'ERCO,01/01/2026,1,01/01/2026 1:00:00 AM,01/01/2026 1:00:00 AM,"40,000","41,000","45,000",,'
    '"10,000","20,000","5,000",0,0,0,"10,000",0,0',
    'ERCO,01/01/2026,2,01/01/2026 2:00:00 AM,01/01/2026 2:00:00 AM,"40,000","41,000","40,000","40,000",'
    '"10,000","20,000","5,000",0,0,0,"5,000",0,0',
    'CISO,01/01/2026,1,01/01/2026 1:00:00 AM,01/01/2026 1:00:00 AM,"20,000","21,000","20,000",,'
    '0,"10,000",0,0,0,"10,000",0,0,0',
]


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_electricity_maps_hours_keep_their_source_and_estimated_flag(tmp_path: Path) -> None:
    path = write(tmp_path, "DE_2026_hourly.csv", [EM_HEADER, *EM_ROWS])
    assert detect_format(path) == "electricitymaps"
    series = read_intensity(path)
    assert series.kg_per_kwh_by_hour == {H0: pytest.approx(0.3805), H0 + 3600: pytest.approx(0.350)}
    assert series.provenance[H0].estimated is False and series.provenance[H0 + 3600].estimated is True
    assert series.provenance[H0].source == "Electricity Maps (entsoe.eu), direct"
    assert "Electricity Maps DE; 1 of 2 hours marked estimated" in series.label
    lca = read_intensity(path, "electricitymaps-lca")
    assert lca.kg_per_kwh_by_hour[H0] == pytest.approx(0.4301)


def test_eia930_intensity_is_generation_weighted_per_fuel_factors(tmp_path: Path) -> None:
    path = write(tmp_path, "EIA930_BALANCE_2026_Jan_Jun.csv", [EIA_HEADER, *EIA_ROWS])
    assert detect_format(path) == "eia930"
    with pytest.raises(ConfigError, match="holds CISO, ERCO: pass --authority"):
        read_intensity(path)
    series = read_intensity(path, authority="ERCO")
    coal, gas, nuclear, wind = (EIA_FACTORS[f][0] for f in ("Coal", "Natural Gas", "Nuclear", "Wind"))
    first = (10_000 * coal + 20_000 * gas + 5_000 * nuclear + 10_000 * wind) / 45_000
    assert series.kg_per_kwh_by_hour[H0] == pytest.approx(first)  # the hour *ending* 01:00 starts at 00:00
    assert series.provenance[H0].estimated is False
    assert series.provenance[H0 + 3600].estimated is True  # EIA imputed its generation
    assert "EIA-930 ERCO" in series.provenance[H0].source


def test_plain_csv_is_still_read(tmp_path: Path) -> None:
    path = write(tmp_path, "grid.csv", ["timestamp,kg_co2_per_kwh", "2026-01-01T00:00:00Z,0.5"])
    assert detect_format(path) == "csv"
    assert read_intensity(path) == HourlySeries.from_csv(path)


def test_bad_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not on the hour"):
        read_intensity(write(tmp_path, "a.csv", [EM_HEADER, EM_ROWS[0].replace("00:00:00", "00:30:00", 1)]))
    with pytest.raises(ConfigError, match="appears twice"):
        read_intensity(write(tmp_path, "b.csv", [EM_HEADER, EM_ROWS[0], EM_ROWS[0]]))
    with pytest.raises(ConfigError, match="not an Electricity Maps hourly CSV"):
        read_intensity(write(tmp_path, "c.csv", ["Datetime (UTC),x", "2026-01-01 00:00:00,1"]))
    with pytest.raises(ConfigError, match="unknown intensity format"):
        read_intensity(write(tmp_path, "d.csv", [EM_HEADER, *EM_ROWS]), "watttime")


def test_table_reads_an_electricity_maps_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.cli import main
    from wattlog.records import EnergyInterval, Kind, Source

    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r", RunSpec(site="jupiter"))
    rows = [
        EnergyInterval.of(
            "h", "GPU-0", Kind.GPU, Source.COUNTER, H0 + 3600 * i, H0 + 3600 * (i + 1), 3.6e9, 3.6e9, 3.6e9
        )
        for i in range(2)
    ]
    ledger.record_intervals(run.id, rows)  # type: ignore[arg-type]
    ledger.engine.dispose()
    path = write(tmp_path, "DE.csv", [EM_HEADER, *EM_ROWS])
    assert main(["table", "r", "--db", url, "--intensity", str(path), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    # 1 MWh x 1.2 x 0.3805 + 1 MWh x 1.2 x 0.350, under a tonne: the column is in kg (one unit per column)
    assert "Emissions (kgCO2eq)" in out and "| 877 |" in out
    assert "1 of 2 hours marked estimated" in out


def test_a_sites_zone_picks_its_rows_of_an_electricity_maps_file(tmp_path: Path) -> None:
    from wattlog.accounting.carbon.intensity import IntensityRef
    from wattlog.accounting.carbon.intensity.registry import open_intensity

    path = write(tmp_path, "DE.csv", [EM_HEADER, *EM_ROWS])
    assert open_intensity(IntensityRef("electricitymaps", str(path), "DE")).kg_per_kwh_at(
        H0
    ) == pytest.approx(0.3805)
    with pytest.raises(ConfigError, match="no intensity rows"):
        open_intensity(IntensityRef("electricitymaps", str(path), "FR"))  # never another zone's hours
