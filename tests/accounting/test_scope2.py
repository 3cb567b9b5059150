"""Market-based Scope 2 beside location-based, annual and hourly matching, checked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattlog.accounting.carbon.intensity import ConstantIntensity
from wattlog.accounting.carbon.market import Instrument, InstrumentKind, Market, load_markets
from wattlog.accounting.carbon.scope2 import Allocation, Matching
from wattlog.accounting.publishing.footprint import CarbonPath
from wattlog.accounting.ranges import Range
from wattlog.errors import ConfigError

H = 3600
T0 = 1_774_742_400  # 2026-03-29T00:00Z
RUN = {T0: 1.0, T0 + H: 1.0, T0 + 2 * H: 1.0}  # IT MWh per hour
MARKET_FILE = (Path(__file__).parent / "data" / "market_example.toml").read_text(encoding="utf-8")


@pytest.fixture
def market(tmp_path: Path) -> Market:
    path = tmp_path / "market.toml"
    path.write_text(MARKET_FILE, encoding="utf-8")
    return load_markets(path)["mylab"]


def test_location_and_market_based_side_by_side(market: Market) -> None:
    # facility energy 3 x 1 MWh x PUE 1.2 = 3.6 MWh; location-based at 0.4 kg/kWh: 1.44 t
    assert CarbonPath(1.2, ConstantIntensity(0.4, "grid")).co2_t(3.0) == pytest.approx(1.44)
    annual = Allocation(market, Matching.ANNUAL).apply(RUN, 1.2)
    # annual: PPA 2.4 + certificate 1.0 at 0, the last 0.2 MWh from the supplier at 0.2: 0.04 t
    assert annual.co2_t == pytest.approx(0.04) and annual.covered_mwh == pytest.approx(3.6)
    assert annual.used_mwh == pytest.approx({"ppa": 2.4, "rec": 1.0, "supplier": 0.2})
    hourly = Allocation(market, Matching.HOURLY).apply(RUN, 1.2)
    # hourly: the PPA gives 0.8 MWh in each of its hours; the year-long ones match no hour;
    # each hour 1.2 - 0.8 = 0.4 MWh at the residual 0.5: 3 x 0.2 = 0.6 t
    assert hourly.co2_t == pytest.approx(0.6) and hourly.covered_mwh == pytest.approx(2.4)
    assert hourly.used_mwh == pytest.approx({"ppa": 2.4})


def test_no_instrument_is_used_twice_across_runs(market: Market) -> None:
    annual = Allocation(market, Matching.ANNUAL)
    annual.apply(RUN, 1.2)
    second = annual.apply(RUN, 1.2)  # PPA and certificate spent: all from the supplier, 3.6 x 0.2
    assert second.co2_t == pytest.approx(0.72) and second.used_mwh == pytest.approx({"supplier": 3.6})
    assert annual.unused() == pytest.approx({"ppa": 0.0, "rec": 0.0, "supplier": 6.2})
    hourly = Allocation(market, Matching.HOURLY)
    hourly.apply(RUN, 1.2)
    assert hourly.apply(RUN, 1.2).co2_t == pytest.approx(3.6 * 0.5)
    assert hourly.unused() == pytest.approx({"ppa": 0.0, "rec": 1.0, "supplier": 10.0})


def test_an_instrument_of_another_vintage_covers_nothing() -> None:
    old = Instrument("old", InstrumentKind.CERTIFICATE, 100.0, 0.0, "certificate 2025", 2025)
    figure = Allocation(Market(0.5, "residual", (old,)), Matching.ANNUAL).apply(RUN, 1.0)
    assert figure.covered_mwh == 0.0 and figure.co2_t == pytest.approx(1.5)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Instrument("a", InstrumentKind.PPA, 0.0, 0.0, "s", 2026), "mwh must be > 0"),
        (lambda: Instrument("a", InstrumentKind.PPA, 1.0, 0.0, "", 2026), "needs a source"),
        (lambda: Instrument("a", InstrumentKind.PPA, 1.0, 0.0, "s", 2025, T0, T0 + H), "outside its vintage"),
        (lambda: Instrument("a", InstrumentKind.PPA, 1.0, 0.0, "s", 2026, T0 + 1, T0 + H), "on the hour"),
        (lambda: Market(0.5, "", ()), "needs its source"),
        (
            lambda: Market(0.5, "r", (Instrument("a", InstrumentKind.PPA, 1.0, 0.0, "s", 2026),) * 2),
            "appear twice",
        ),
    ],
)
def test_invalid_instruments_are_refused(make: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make()  # type: ignore[operator]


def test_a_range_pue_is_refused(market: Market) -> None:
    with pytest.raises(ConfigError, match="one PUE"):
        Allocation(market, Matching.ANNUAL).apply(RUN, Range(1.1, 1.2))


def test_a_market_file_missing_a_figure_names_it(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(MARKET_FILE.replace("mwh = 2.4\n", ""), encoding="utf-8")
    with pytest.raises(ConfigError, match="lacks 'mwh'"):
        load_markets(path)


def test_recorded_uses_are_spent_and_a_run_applied_again_keeps_its_own_share(market: Market) -> None:
    from wattlog.accounting.carbon.scope2 import Use

    annual = Allocation(market, Matching.ANNUAL)
    annual.record([Use("ppa", 2026, "earlier", 2.4), Use("rec", 2026, "earlier", 1.0)])  # another call's
    first = annual.apply(RUN, 1.2, "r1")
    assert first.used_mwh == pytest.approx({"supplier": 3.6}) and first.co2_t == pytest.approx(0.72)
    again = annual.apply(RUN, 1.2, "r1")  # the same run again: its uses replaced, not added to
    assert again.uses == pytest.approx(first.uses) and annual.unused()["supplier"] == pytest.approx(6.4)
    assert again.uses == pytest.approx({("supplier", 2026): 3.6})
