"""One CO2 path: a site's hourly series gives the same CO2 in the live logs as in the table."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from wattlog.accounting.carbon.intensity import HourSplitter
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.footprint import CarbonPath, LiveCarbon
from wattlog.accounting.publishing.run_table import TableOptions, run_footprint
from wattlog.integrations.session import figures_of
from wattlog.records import EnergyFigure, EnergyInterval, Kind, Source
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo

H0 = 1_767_225_600  # 2026-01-01T00:00:00Z
SITES = """\
[sites.texas]
pue = 1.2
wue_onsite_l_per_kwh = 0.0
wue_offsite_l_per_kwh = 1.29
carbon_intensity_kg_per_kwh = 0.4

[sites.texas.intensity]
source = "csv"
series = "grid.csv"
"""
HOURLY_J = [3.6e9, 7.2e9]  # 1 MWh in the first hour (0.5 kg/kWh), 2 MWh in the second (0.1 kg/kWh)
EXPECTED_T = 1.2 * (1 * 0.5 + 2 * 0.1)


@pytest.fixture
def sites_file(tmp_path: Path) -> Path:
    grid = "timestamp,kg_co2_per_kwh\n2026-01-01T00:00:00Z,0.5\n2026-01-01T01:00:00Z,0.1\n"
    (tmp_path / "grid.csv").write_text(grid, encoding="utf-8")
    path = tmp_path / "sites.toml"
    path.write_text(SITES, encoding="utf-8")
    return path


@dataclass
class FakeTracker:
    site: str
    devices: list[DeviceEnergy] = field(default_factory=list)
    speed: Any = None

    def snapshot(self) -> list[DeviceEnergy]:
        return self.devices

    def power_w(self) -> float | None:
        return None


def _reading(total_j: float) -> DeviceEnergy:
    info = DeviceInfo(uuid="GPU-0", name="GPU-0", kind=Kind.GPU, source=Source.COUNTER, has_counter=True)
    return DeviceEnergy(
        info, EnergyFigure(info.kind, info.source, total_j, total_j, total_j), None, 10, 0, 0.0
    )


def test_table_co2_of_a_site_naming_an_hourly_series(sites_file: Path, tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("r", RunSpec(site="texas"))
    rows = [
        EnergyInterval.of("h", "GPU-0", Kind.GPU, Source.COUNTER, H0 + 3600 * i, H0 + 3600 * (i + 1), j, j, j)
        for i, j in enumerate(HOURLY_J)
    ]
    ledger.record_intervals(run.id, rows)  # type: ignore[arg-type]
    found = run_footprint(ledger, ledger.get_run("r"), TableOptions(catalog=site_catalog(sites_file)))
    assert found is not None and found.hourly
    assert found.co2_t == pytest.approx(EXPECTED_T)  # not 3 MWh x 1.2 x the constant 0.4 (1.44 t)
    assert "grid.csv" in found.intensity_label


def test_live_logs_give_the_tables_co2_for_an_hourly_site(sites_file: Path) -> None:
    catalog = site_catalog(sites_file)
    carbon = LiveCarbon(CarbonPath.of(catalog["texas"]), HourSplitter(H0))
    tracker = FakeTracker("texas")
    out: dict[str, float] = {}
    # the framework logs every half hour; power is steady within each hour, as in the table's rows
    for k in range(1, 5):
        hour_j = HOURLY_J[(k - 1) // 2]
        total = sum(HOURLY_J[: (k - 1) // 2]) + hour_j * (1 if k % 2 == 0 else 0.5)
        tracker.devices = [_reading(total)]
        out = figures_of(tracker, carbon, wall=lambda k=k: H0 + 1800.0 * k, catalog=catalog)  # type: ignore[arg-type]
    assert out["wattlog/co2_kg"] == pytest.approx(1000 * EXPECTED_T)


def test_without_a_running_path_a_constant_site_still_needs_no_hours() -> None:
    tracker = FakeTracker("jupiter", [_reading(3.6e9)])
    out = figures_of(tracker)  # type: ignore[arg-type]
    assert out["wattlog/co2_kg"] == pytest.approx(1000 * 1.2 * 0.332)


def test_a_site_whose_intensity_cannot_open_stops_the_agent_before_training() -> None:
    from wattlog.errors import ConfigError
    from wattlog.integrations.session import TrackerSession

    closed: list[BaseException | None] = []

    @dataclass
    class StartingTracker(FakeTracker):
        def start(self) -> StartingTracker:
            return self

        def close(self, error: BaseException | None = None) -> None:
            closed.append(error)

    session = TrackerSession("r", {}, tracker_factory=lambda run, **kw: StartingTracker("atlantis"))
    with pytest.raises(ConfigError, match="unknown site 'atlantis'"):
        session.start(rank=0, local_rank=0)
    assert len(closed) == 1 and isinstance(closed[0], ConfigError) and not session.active
