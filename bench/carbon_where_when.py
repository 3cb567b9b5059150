"""Carbon and water where and when the energy was used, from recorded provider answers.

Run: ``.venv/bin/python -m bench.carbon_where_when``

Replays the recorded answers of tests/accounting/data/providers/ from a local HTTP server
(no network) and prints: one run (1 MWh of IT energy in each of three hours from
2026-03-29T00:00Z, PUE 1.2) accounted with each provider; location- and market-based CO2
for the example market (tests/accounting/data/market_example.toml: a PPA over the run's
hours, a year-long certificate, a supplier factor) under annual and hourly matching; grid
water by hour beside the constant WUE; and the cleanest window on a recorded forecast.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path

from pytest_httpserver import HTTPServer

from wattlog.accounting.footprint import CarbonPath, water_kl
from wattlog.accounting.grid_water import GridWater, water_series
from wattlog.accounting.intensity import ConstantIntensity, IntensityRef
from wattlog.accounting.intensity.hours import iso_hour
from wattlog.accounting.intensity.live.cache import fetch_into_ledger
from wattlog.accounting.intensity.live.eia_api import EiaApi
from wattlog.accounting.intensity.live.providers import ProviderContext, open_provider
from wattlog.accounting.intensity.live.window import cleanest_window
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.market import load_markets
from wattlog.accounting.scope2 import Allocation, Matching
from wattlog.accounting.sites import Site

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
        f"{choice.now_mean_kg_per_kwh:.4f} now; saves {choice.saved_t or 0.0:.4f} t "
        f"({choice.saved_fraction:.1%})"
    )


def main() -> None:
    """Print the four figures."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # the replay server's request lines
    with HTTPServer() as server, tempfile.TemporaryDirectory() as folder:
        providers(server, Path(folder))
        server.clear()
        scope2()
        grid_water(server)
        server.clear()
        forecast(server)


if __name__ == "__main__":
    main()
