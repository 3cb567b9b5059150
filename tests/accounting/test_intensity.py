"""Carbon intensity: constants, hourly CSV series (malformed lines named), and energy split by hour."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from wattlog.accounting.carbon.intensity import (
    ConstantIntensity,
    HourlySeries,
    hour_start_s,
    split_by_hour_mwh,
)
from wattlog.accounting.ranges import Range
from wattlog.accounting.units import mwh_to_j
from wattlog.errors import ConfigError
from wattlog.records import EnergyInterval, Kind, Source

T0 = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "grid.csv"
    path.write_text(text, encoding="utf-8")
    return path


def _interval(start_s: float, end_s: float, energy_mwh: float) -> EnergyInterval:
    j = mwh_to_j(energy_mwh)
    return EnergyInterval.of("h", "gpu0", Kind.GPU, Source.COUNTER, start_s, end_s, j, j, j)


def test_constant_intensity() -> None:
    c = ConstantIntensity(0.332, "paper")
    assert c.kg_per_kwh_at(123.0) == 0.332
    assert c.constant_kg_per_kwh == 0.332
    assert "0.332" in c.label and "paper" in c.label
    assert ConstantIntensity(Range(0.2, 0.4), "x").kg_per_kwh_at(0) == Range(0.2, 0.4)
    with pytest.raises(ConfigError, match="carbon intensity cannot be negative"):
        ConstantIntensity(-0.1, "x")


def test_series_reads_iso_and_unix_with_header_and_comments(tmp_path: Path) -> None:
    path = _csv(
        tmp_path,
        "timestamp,kg_co2_per_kwh\n# from the grid operator\n"
        f"2026-01-01T00:00:00Z,0.30\n\n{T0 + 3600},0.20\n2026-01-01T02:00:00,0.10\n",
    )
    series = HourlySeries.from_csv(path)
    assert series.kg_per_kwh_by_hour == {T0: 0.30, T0 + 3600: 0.20, T0 + 7200: 0.10}
    assert series.kg_per_kwh_at(T0 + 3599.9) == 0.30
    assert series.kg_per_kwh_at(T0 + 3600) == 0.20
    assert series.constant_kg_per_kwh is None
    assert series.label == f"hourly intensity from {path}"


def test_series_without_header(tmp_path: Path) -> None:
    assert HourlySeries.from_csv(_csv(tmp_path, f"{T0},0.5\n")).kg_per_kwh_at(T0) == 0.5


def test_missing_hour_is_an_error_not_a_default(tmp_path: Path) -> None:
    series = HourlySeries.from_csv(_csv(tmp_path, f"{T0},0.5\n"))
    with pytest.raises(ConfigError, match="no value for the hour starting 2026-01-01T01:00Z"):
        series.kg_per_kwh_at(T0 + 3600)


@pytest.mark.parametrize(
    ("body", "line", "reason"),
    [
        (f"{T0},0.3\n{T0 + 3600},abc\n", 3, "intensity 'abc' is not a number"),
        (f"{T0},0.3\nyesterday,0.2\n", 3, "neither ISO 8601 nor Unix"),
        (f"{T0},0.3\n{T0 + 3600},0.2,9\n", 3, "3 fields"),
        (f"{T0},0.3\n{T0 + 60},0.2\n", 3, "not on the hour"),
        (f"{T0},0.3\n{T0 + 3600},-0.2\n", 3, ">= 0"),
        (f"{T0},0.3\n{T0},0.2\n", 3, "appears twice"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, body: str, line: int, reason: str) -> None:
    path = _csv(tmp_path, "timestamp,kg_co2_per_kwh\n" + body)
    with pytest.raises(ConfigError) as info:
        HourlySeries.from_csv(path)
    message = str(info.value)
    assert message.startswith(f"{path}, line {line}: ")
    assert reason in message
    assert "\n" not in message


def test_empty_or_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no intensity rows"):
        HourlySeries.from_csv(_csv(tmp_path, "timestamp,kg_co2_per_kwh\n"))
    with pytest.raises(ConfigError, match="cannot read intensity series"):
        HourlySeries.from_csv(tmp_path / "absent.csv")


def test_hour_start() -> None:
    assert hour_start_s(T0 + 5400.5) == T0 + 3600
    assert hour_start_s(datetime(2026, 1, 1, 0, 30)) == T0  # naive means UTC
    assert hour_start_s(datetime(2026, 1, 1, 0, 30, tzinfo=UTC)) == T0


def test_split_by_hour_spreads_intervals_and_keeps_the_total() -> None:
    intervals = [_interval(T0 + 1800, T0 + 5400, 2.0), _interval(T0 + 5400, T0 + 5410, 0.5)]
    by_hour = split_by_hour_mwh(intervals)
    assert by_hour == pytest.approx({T0: 1.0, T0 + 3600: 1.5})
    assert sum(by_hour.values()) == pytest.approx(2.5)


def test_split_by_hour_zero_length_interval_lands_in_its_hour() -> None:
    assert split_by_hour_mwh([_interval(T0 + 10, T0 + 10, 1.0)]) == pytest.approx({T0: 1.0})


def test_a_running_total_splits_into_the_hours_its_intervals_would() -> None:
    from wattlog.accounting.carbon.intensity import HourSplitter

    splitter = HourSplitter(T0 + 1800)
    assert splitter.add(T0 + 1800, 0.0) == {}
    splitter.add(T0 + 5400, 2.0 * 3.6e9)  # 2 MWh over 01:30..02:30 of the clock, as one reading
    by_hour = splitter.add(T0 + 5410, 2.5 * 3.6e9)
    expected = split_by_hour_mwh([_interval(T0 + 1800, T0 + 5400, 2.0), _interval(T0 + 5400, T0 + 5410, 0.5)])
    assert by_hour == pytest.approx(expected)
    assert splitter.add(T0 + 5420, 2.5 * 3.6e9) == pytest.approx(expected)  # no energy, no change
