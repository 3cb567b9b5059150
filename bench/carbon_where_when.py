"""Carbon and water where and when the energy was used, from recorded provider answers.

Run: ``.venv/bin/python -m bench.carbon_where_when``

Replays the recorded answers of tests/accounting/data/providers/ from a local HTTP server
(no network) and prints: one run (1 MWh of IT energy in each of three hours from
2026-03-29T00:00Z, PUE 1.2) accounted with each provider; location- and market-based CO2
for the example market (tests/accounting/data/market_example.toml: a PPA over the run's
hours, a year-long certificate, a supplier factor) under annual and hourly matching, in one
call and in separate calls (uses recorded in the ledger); a run's hours fetched at its close,
its live figure against the table's; grid water by hour beside the constant WUE; and the
cleanest window on a recorded forecast.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path

from pytest_httpserver import HTTPServer

from wattlog.accounting.carbon.grid_water import GridWater, water_series
from wattlog.accounting.carbon.instruments import load_uses, replace_uses
from wattlog.accounting.carbon.intensity import ConstantIntensity, HourSplitter, IntensityRef
from wattlog.accounting.carbon.intensity.hours import iso_hour
from wattlog.accounting.carbon.intensity.live.at_close import fetch_at_close
from wattlog.accounting.carbon.intensity.live.cache import fetch_into_ledger
from wattlog.accounting.carbon.intensity.live.eia_api import EiaApi
from wattlog.accounting.carbon.intensity.live.providers import ProviderContext, open_provider
from wattlog.accounting.carbon.intensity.live.window import cleanest_window
from wattlog.accounting.carbon.market import load_markets
from wattlog.accounting.carbon.scope2 import Allocation, Matching
from wattlog.accounting.carbon.sites import Site
from wattlog.accounting.ledger import Ledger, RunSpec, Status, make_engine
from wattlog.accounting.publishing.footprint import CarbonPath, LiveCarbon, water_kl
from wattlog.accounting.publishing.run_table import TableOptions, run_footprint
from wattlog.records import EnergyInterval, Kind, Source

DATA = Path(__file__).parents[1] / "tests" / "accounting" / "data"
T0 = 1_774_742_400
H = 3600
RUN = {T0: 1.0, T0 + H: 1.0, T0 + 2 * H: 1.0}
PUE = 1.2
PROVIDERS = [
    ("electricitymaps-api", "DE", "electricitymaps_past_range.json", "/v3/carbon-intensity/past-range"),
    ("watttime", "CAISO_NORTH", "watttime_historical.json", "/v3/historical"),
    ("ukgrid", "GB", "ukgrid_intensity.json", re.compile(r"/intensity/.*")),
    ("eia-api", "ERCO", "eia_fuel_type_data.json", "/v2/electricity/rto/fuel-type-data/data/"),
]
ENVIRON = {
    "ELECTRICITYMAPS_TOKEN": "t",
    "WATTTIME_USER": "u",
    "WATTTIME_PASSWORD": "p",
    "EIA_API_KEY": "k",
}


def _recorded(name: str) -> object:
    return json.loads((DATA / "providers" / name).read_text(encoding="utf-8"))


def providers(server: HTTPServer, folder: Path) -> None:
    """One run accounted with each provider."""
    print("One run: 1 MWh IT in each of 3 hours from 2026-03-29T00:00Z, PUE 1.2")
    print(f"{'provider':<22}{'zone':<13}{'kg/kWh by hour':<26}{'t CO2e':>8}")
    server.expect_request("/login").respond_with_json({"token": "jwt"})
    for provider, zone, recorded, path in PROVIDERS:
        server.expect_request(path).respond_with_json(_recorded(recorded))
        ledger = Ledger(make_engine(f"sqlite:///{folder / (provider + '.db')}"))
        ref = IntensityRef(provider, "", zone)
        context = ProviderContext(environ=ENVIRON, base_url=server.url_for(""), sleep=lambda _: None)
        fetch_into_ledger(ledger, ref, T0, T0 + 3 * H, context)
        site = Site("s", PUE, 0.0, 1.29, 0.5, {"carbon_intensity_kg_per_kwh": "fallback"}, "", ref)
        path_ = CarbonPath.of(site, ledger=ledger)
        hours = " ".join(f"{path_.intensity.kg_per_kwh_at(h):.4f}" for h in RUN)
        print(f"{provider:<22}{zone:<13}{hours:<26}{path_.co2_t(3.0, RUN):>8.4f}")


def scope2() -> None:
    """Location- and market-based CO2 of the example, annual and hourly matching."""
    market = load_markets(DATA / "market_example.toml")["mylab"]
    location = CarbonPath(PUE, ConstantIntensity(0.4, "example grid")).co2_t(3.0)
    print(
        "\nScope 2 of the same run at a 0.4 kg/kWh grid (market: tests/accounting/data/market_example.toml)"
    )
    print(f"{'run':<6}{'location t':>11}{'annual t':>10}{'covered':>9}{'hourly t':>10}{'covered':>9}")
    annual, hourly = Allocation(market, Matching.ANNUAL), Allocation(market, Matching.HOURLY)
    for run in ("r1", "r2"):
        a, h = annual.apply(RUN, PUE), hourly.apply(RUN, PUE)
        print(
            f"{run:<6}{location:>11.4f}{a.co2_t:>10.4f}{a.covered_mwh:>9.2f}{h.co2_t:>10.4f}{h.covered_mwh:>9.2f}"
        )


def scope2_across_calls(folder: Path) -> None:
    """The same two runs accounted in two separate calls: the ledger keeps r1's uses from r2."""
    market = load_markets(DATA / "market_example.toml")["mylab"]
    ledger = Ledger(make_engine(f"sqlite:///{folder / 'scope2.db'}"))
    for run in ("r1", "r2"):
        ledger.start_run(run)
    print("Separate calls (`wattlog scope2 r1`, later `wattlog scope2 r2`; uses recorded in the ledger):")
    for run in ("r1", "r2", "r1"):  # r1 again last: its own share, not a second one
        figures = []
        for method in Matching:
            allocation = Allocation(market, method)  # a fresh call: only the ledger remembers
            allocation.record(load_uses(ledger, "mylab", method.value))
            figure = allocation.apply(RUN, PUE, run)
            replace_uses(ledger, "mylab", method.value, run, figure.uses)
            figures.append(figure)
        a, h = figures
        print(f"  {run:<4} annual {a.co2_t:.4f} t ({a.covered_mwh:.2f} MWh covered), hourly {h.co2_t:.4f} t")
    print(
        "  hand check: facility 3 x 1 MWh x 1.2 = 3.6 MWh; location 3.6 x 0.4 = 1.44 t.\n"
        "  r1 annual: PPA 2.4 + certificate 1.0 at 0, supplier 0.2 x 0.2 = 0.04 t; hourly: the PPA gives\n"
        "  0.8 MWh of each 1.2 MWh hour, the rest 3 x 0.4 x 0.5 (residual) = 0.60 t.\n"
        "  r2 annual: supplier 3.6 x 0.2 = 0.72 t; hourly: all residual, 3.6 x 0.5 = 1.80 t."
    )


def one_path(server: HTTPServer, folder: Path) -> None:
    """Live logs and the table on one CO2 path with the same hours; a run's hours fetched at its close."""
    server.expect_request(re.compile(r"/intensity/.*")).respond_with_json(_recorded("ukgrid_intensity.json"))
    context = ProviderContext(base_url=server.url_for(""), sleep=lambda _: None)
    ref = IntensityRef("ukgrid", "", "GB")
    site = Site("gbdc", PUE, 0.0, 1.29, 0.5, {"carbon_intensity_kg_per_kwh": "fallback"}, "", ref)
    options = TableOptions(catalog={"gbdc": site})
    print("\nOne CO2 path, GB (ukgrid), the same run; the site's constant 0.5 kg/kWh for hours not stored:")
    for when in ("mid-run", "close"):
        ledger = Ledger(make_engine(f"sqlite:///{folder / f'path-{when}.db'}"))
        run = ledger.start_run("g1", RunSpec(site="gbdc"), start_s=T0)
        live = LiveCarbon(CarbonPath.of(site, ledger=ledger, live=True), HourSplitter(T0))
        logged = []
        for i in range(3):  # 1 MWh IT in each hour; a live log at each hour's end
            if when == "mid-run" and i == 2:  # `wattlog intensity fetch --run g1` while it runs
                fetch_into_ledger(ledger, ref, T0, T0 + 3 * H, context)
            logged.append(live.co2_t(T0 + (i + 1) * H, 3.6e9 * (i + 1)))
        rows = [
            EnergyInterval.of("n", "g", Kind.GPU, Source.COUNTER, T0 + i * H, T0 + (i + 1) * H, *[3.6e9] * 3)
            for i in range(3)
        ]
        ledger.record_intervals(run.id, rows)
        ledger.end_run(run.id, Status.FINISHED, end_s=T0 + 3 * H)
        done = fetch_at_close(ledger, "g1", {"gbdc": site}, context)
        table = run_footprint(ledger, ledger.get_run("g1"), options)
        assert done is not None and table is not None
        print(
            f"  hours stored {when}: live logs {', '.join(f'{t:.4f}' for t in logged)} t;"
            f" table {table.co2_t:.4f} t;"
        )
        print(
            f"    last live == table to the last digit: {logged[-1] == table.co2_t}"
            f" ({logged[-1]!r}, {table.co2_t!r})"
        )
        print(f"    at close: {done.line}")


def grid_water(server: HTTPServer) -> None:
    """Grid water of ERCO by hour (recorded EIA mixes) beside the constant WUE."""
    server.expect_request("/v2/electricity/rto/fuel-type-data/data/").respond_with_json(
        _recorded("eia_fuel_type_data.json")
    )
    context = ProviderContext(environ=ENVIRON, base_url=server.url_for(""), sleep=lambda _: None)
    eia = open_provider("eia-api", context)
    assert isinstance(eia, EiaApi)
    mixes = eia.generation("ERCO", T0, T0 + 3 * H)
    grid = GridWater(water_series(mixes, "ERCO", 1.29, "eia-api ERCO"), 1.29, "OLMo 2 paper, Jupiter")
    print("\nOff-site water, ERCO, same run: grid mix by hour against the constant WUE 1.29 L/kWh")
    for hour in RUN:
        mix = ", ".join(f"{fuel} {mwh:g}" for fuel, mwh in mixes[hour].items())
        print(f"  {iso_hour(hour)}  {grid.l_per_kwh_at(hour):6.3f} L/kWh  ({mix} MWh)")
    constant_kl = water_kl(3.0, PUE, 0.0, 1.29)
    print(f"  total: {grid.offsite_kl(RUN, PUE):.3f} kL from the mix; {constant_kl:.3f} kL at the constant")


def forecast(server: HTTPServer) -> None:
    """The cleanest 3-hour window on a recorded NESO forecast."""
    server.expect_request(re.compile(r"/intensity/.*/fw48h")).respond_with_json(
        _recorded("ukgrid_fw48h.json")
    )
    context = ProviderContext(base_url=server.url_for(""), clock=lambda: T0)
    values = dict(open_provider("ukgrid", context).forecast("GB").series.kg_per_kwh_by_hour)
    choice = cleanest_window(values, 3, power_kw=800.0, pue=PUE)
    print("\nCleanest 3-hour window on the recorded GB forecast (800 kW IT, PUE 1.2)")
    print("  " + " ".join(f"{v:.3f}" for v in values.values()))
    print(
        f"  start {iso_hour(choice.start_s)}: {choice.mean_kg_per_kwh:.4f} kg/kWh against "
        f"{choice.now_mean_kg_per_kwh:.4f} now; saves "
        + ("-" if choice.saved_t is None else f"{choice.saved_t:.4f}")
        + " t "
        f"({choice.saved_fraction:.1%})"
    )


def main() -> None:
    """Print the four figures."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # the replay server's request lines
    with HTTPServer() as server, tempfile.TemporaryDirectory() as folder:
        providers(server, Path(folder))
        server.clear()
        scope2()
        scope2_across_calls(Path(folder))
        one_path(server, Path(folder))
        server.clear()
        grid_water(server)
        server.clear()
        forecast(server)


if __name__ == "__main__":
    main()
