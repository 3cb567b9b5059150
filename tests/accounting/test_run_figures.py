"""A run's own figures (GPU-hours, requests served): stored where given, refused when they cannot be."""

from __future__ import annotations

import math

import pytest

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError, RunNotFound


@pytest.fixture
def ledger() -> Ledger:
    ledger = Ledger(make_engine("sqlite://"), clock=FakeClock(wall_offset_s=1_800_000_000.0))
    ledger.start_run("r", RunSpec(site="jupiter"))
    return ledger


def test_each_figure_is_stored_where_given_and_the_other_kept(ledger: Ledger) -> None:
    assert ledger.set_run_figures("r", gpu_hours=12.5).gpu_hours == 12.5
    info = ledger.set_run_figures("r", requests=400)
    assert (info.gpu_hours, info.requests) == (12.5, 400)
    assert (ledger.get_run("r").gpu_hours, ledger.get_run("r").requests) == (12.5, 400)


@pytest.mark.parametrize(
    ("gpu_hours", "requests"), [(-1.0, None), (math.nan, None), (math.inf, None), (None, -3)]
)
def test_a_figure_that_cannot_be_is_refused_and_nothing_stored(
    ledger: Ledger, gpu_hours: float | None, requests: int | None
) -> None:
    with pytest.raises(ConfigError, match="must be"):
        ledger.set_run_figures("r", gpu_hours=gpu_hours, requests=requests)
    with pytest.raises(ConfigError):  # refused before the run is looked up
        ledger.set_run_figures("no-such-run", gpu_hours=gpu_hours, requests=requests)
    assert (ledger.get_run("r").gpu_hours, ledger.get_run("r").requests) == (None, None)


def test_a_missing_run_is_named(ledger: Ledger) -> None:
    with pytest.raises(RunNotFound):
        ledger.set_run_figures("no-such-run", gpu_hours=1.0)
