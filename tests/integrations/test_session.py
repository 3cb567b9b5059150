"""The figures both callbacks add to the framework's logs: sourced, and no silent default site."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from tests.integrations.conftest import wait_for_energy
from wattlog.integrations.session import TrackerSession, figures_of, source_of
from wattlog.records import EnergyFigure, Kind, Source
from wattlog.telemetry.types import DeviceEnergy, DeviceInfo
from wattlog.trainer.callbacks.speed import SpeedFigures


def device(uuid: str, source: Source, energy_j: float, samples: int = 10) -> DeviceEnergy:
    info = DeviceInfo(uuid=uuid, name=uuid, kind=Kind.GPU, source=source, has_counter=True)
    return DeviceEnergy(
        info, EnergyFigure(info.kind, info.source, energy_j, energy_j, energy_j), 100.0, samples, 0, 0.0
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


def test_before_the_first_integrated_interval_the_energy_is_absent_not_0() -> None:
    # found on OLMo-core's callback: a logging step within the agent's first reading logged
    # energy_j 0.0 (band 0 - 0) beside power_w 1,307 W, a measurement of nothing
    for samples in (1, 5):  # one reading; readings, but the counter has not moved since the first
        early = FakeTracker(site="jupiter", devices=[device("g0", Source.COUNTER, 0.0, samples=samples)])
        assert figures_of(early) == {"wattlog/power_w": 100.0}  # type: ignore[arg-type]
    started = FakeTracker(site="jupiter", devices=[device("g0", Source.COUNTER, 50.0, samples=2)])
    assert figures_of(started)["wattlog/energy_j"] == 50.0  # type: ignore[arg-type]


def test_no_site_gives_energy_only_and_mixed_sources_say_so() -> None:
    tracker = FakeTracker(devices=[device("g0", Source.COUNTER, 3.6e6), device("c0", Source.ESTIMATED, 0.0)])
    out = figures_of(tracker)  # type: ignore[arg-type]
    assert out == {
        "wattlog/energy_j": 3.6e6,
        "wattlog/energy_j_low": 3.6e6,
        "wattlog/energy_j_high": 3.6e6,
        "wattlog/energy_kwh": 1.0,
        "wattlog/power_w": 200.0,
    }
    assert source_of(tracker) == "counter+estimated"  # type: ignore[arg-type]


def test_a_site_figure_given_as_a_range_gives_both_ends() -> None:
    tracker = FakeTracker(site="world", devices=[device("g0", Source.COUNTER, 3.6e9)])  # 1 MWh
    out = figures_of(tracker)  # type: ignore[arg-type]
    assert out["wattlog/water_l_low"] < out["wattlog/water_l_high"]
    assert "wattlog/water_l" not in out
    assert out["wattlog/co2_kg"] == pytest.approx(1000 * 1 * _site("world").pue * _intensity("world"))


def _site(name: str) -> Any:
    from wattlog.accounting.carbon.sites import get_site

    return get_site(name)


def _intensity(name: str) -> float:
    return float(_site(name).carbon_intensity_kg_per_kwh)


def test_every_rank_reports_and_only_the_nodes_local_rank_0_measures(tracker_kwargs: dict[str, Any]) -> None:
    from wattlog.accounting.ledger import Ledger, make_engine

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
        wait_for_energy(first)  # rank 0's agent measures
    finally:
        second.end()
        first.end()
    assert Ledger(make_engine(tracker_kwargs["db"])).get_run("two-ranks").status == "finished"


def _speed(tokens_total: float) -> SpeedFigures:
    per_j = tokens_total / 100.0
    return SpeedFigures(step=2, tokens_total=tokens_total, tokens_per_s=0.0, power_w=1.0, energy_j=100.0,
                        tokens_per_j=per_j, mfu=None)  # fmt: skip


def test_tokens_per_joule_only_when_tokens_are_known() -> None:
    devices = [device("g0", Source.COUNTER, 100.0)]
    assert "wattlog/tokens_per_joule" not in figures_of(FakeTracker(devices=devices, speed=_speed(0)))  # type: ignore[arg-type]
    known = figures_of(FakeTracker(devices=devices, speed=_speed(500)))  # type: ignore[arg-type]
    assert known["wattlog/tokens_per_joule"] == 5.0


class StartedTracker(FakeTracker):
    """A FakeTracker the session can start: a wall clock and no ledger."""

    def __init__(self, run: str | None, **kwargs: Any) -> None:
        super().__init__(devices=[device("g0", Source.COUNTER, 100.0)], speed=_speed(0))
        self.session = SimpleNamespace(clock=SimpleNamespace(wall=lambda: 0.0))

    def start(self) -> StartedTracker:
        return self


def test_without_tokens_the_session_says_why_once_on_stderr_whatever_logging_is_set(
    capsys: pytest.CaptureFixture[str],
) -> None:
    wattlog_logger = logging.getLogger("wattlog")
    level = wattlog_logger.level
    wattlog_logger.setLevel(logging.ERROR)  # what an application that configured nothing shows
    try:
        session = TrackerSession("r", {}, tracker_factory=StartedTracker, tokens_hint="Pass tokens=.")  # type: ignore[arg-type]
        session.start(rank=0, local_rank=0)
        for _ in range(3):
            assert "wattlog/tokens_per_joule" not in session.figures()
    finally:
        wattlog_logger.setLevel(level)
    said = capsys.readouterr().err.splitlines()  # used to be a logged WARNING, shown nowhere
    assert said == ["wattlog: wattlog/tokens_per_joule is not logged: no tokens were reported. Pass tokens=."]
    assert session.new_source() == "counter" and session.new_source() is None  # logged when it changes
