"""The figures both callbacks add to the framework's logs: sourced, and no silent default site."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from wattlog.integrations.session import figures_of
from wattlog.records import EnergyFigure, Kind, Source
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo


def device(uuid: str, source: Source, energy_j: float) -> DeviceEnergy:
    info = DeviceInfo(uuid=uuid, name=uuid, kind=Kind.GPU, source=source, has_counter=True)
    return DeviceEnergy(
        info, EnergyFigure(info.kind, info.source, energy_j, energy_j, energy_j), 100.0, 10, 0, 0.0
    )


@dataclass
class FakeTracker:
    site: str = ""
    devices: list[DeviceEnergy] = field(default_factory=list)
    speed: Any = None

    def snapshot(self) -> list[DeviceEnergy]:
        return self.devices

    def power_w(self) -> float | None:
        return 100.0 * len(self.devices) if self.devices else None


def test_a_rank_without_the_agent_adds_nothing() -> None:
    assert figures_of(FakeTracker(site="jupiter")) == {}  # type: ignore[arg-type]


def test_no_site_gives_energy_only_and_mixed_sources_say_so() -> None:
    tracker = FakeTracker(devices=[device("g0", Source.COUNTER, 3.6e6), device("c0", Source.ESTIMATED, 0.0)])
    out = figures_of(tracker)  # type: ignore[arg-type]
    assert out == {
        "wattlog/counter_estimated/energy_j": 3.6e6,
        "wattlog/counter_estimated/energy_j_low": 3.6e6,
        "wattlog/counter_estimated/energy_j_high": 3.6e6,
        "wattlog/counter_estimated/energy_kwh": 1.0,
        "wattlog/counter_estimated/power_w": 200.0,
    }


def test_a_site_figure_given_as_a_range_gives_both_ends() -> None:
    tracker = FakeTracker(site="world", devices=[device("g0", Source.COUNTER, 3.6e9)])  # 1 MWh
    out = figures_of(tracker)  # type: ignore[arg-type]
    assert out["wattlog/counter/water_l_low"] < out["wattlog/counter/water_l_high"]
    assert "wattlog/counter/water_l" not in out
    assert out["wattlog/counter/co2_kg"] == pytest.approx(1000 * 1 * _site("world").pue * _intensity("world"))


def _site(name: str) -> Any:
    from wattlog.accounting.sites import get_site

    return get_site(name)


def _intensity(name: str) -> float:
    return float(_site(name).carbon_intensity_kg_per_kwh)


def test_every_rank_reports_and_only_the_nodes_local_rank_0_measures(tracker_kwargs: dict[str, Any]) -> None:
    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.integrations.session import TrackerSession

    first, second = TrackerSession("two-ranks", tracker_kwargs), TrackerSession("two-ranks", tracker_kwargs)
    first.start(rank=0, local_rank=0)
    second.start(rank=1, local_rank=1)  # joins the run rank 0 registered; runs no second agent
    try:
        for step in range(1, 5):
            first.step(step, loss=2.0, tokens=100)
            second.step(step, loss=2.0, tokens=100)
        assert first.tracker is not None and first.tracker.agent is not None
        assert second.tracker is not None and second.tracker.agent is None
        assert second.figures() == {}  # nothing measured twice: the node's energy is rank 0's
        assert "wattlog/simulated/energy_j" in first.figures()
    finally:
        second.end()
        first.end()
    assert Ledger(make_engine(tracker_kwargs["db"])).get_run("two-ranks").status == "finished"
