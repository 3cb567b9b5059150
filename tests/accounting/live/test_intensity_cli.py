"""`wattlog intensity fetch|hours|forecast` against a replayed provider."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tests.accounting.live.conftest import T0
from wattlog.accounting.carbon.intensity.hours import iso_hour
from wattlog.cli import main

H = 3600
SITES = """
[sites.gbdc]
pue = 1.2
wue_onsite_l_per_kwh = 0.0
wue_offsite_l_per_kwh = 1.29
carbon_intensity_kg_per_kwh = 0.3

[sites.gbdc.intensity]
source = "ukgrid"
zone = "GB"

[sites.emdc]
pue = 1.1
wue_onsite_l_per_kwh = 0.0
wue_offsite_l_per_kwh = 1.29
carbon_intensity_kg_per_kwh = 0.4

[sites.emdc.intensity]
source = "electricitymaps-api"
zone = "DE"
"""


def _half(t_s: int, grams: float) -> dict[str, object]:
    return {
        "from": iso_hour(t_s),
        "to": iso_hour(t_s + 1800),
        "intensity": {"forecast": grams, "actual": grams},
    }


@pytest.fixture
def args(tmp_path: Path, httpserver: HTTPServer) -> list[str]:
    sites = tmp_path / "sites.toml"
    sites.write_text(SITES, encoding="utf-8")
    return ["--sites-file", str(sites), "--db", f"sqlite:///{tmp_path / 'l.db'}"]


def test_fetch_then_hours_offline_with_each_hour_labelled(
    httpserver: HTTPServer, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    halves = [_half(T0, 100), _half(T0 + 1800, 100)]  # the second hour is missing
    httpserver.expect_request(f"/intensity/{iso_hour(T0)}/{iso_hour(T0 + 2 * H)}").respond_with_json(
        {"data": halves}
    )
    span = ["--start", iso_hour(T0), "--end", iso_hour(T0 + 2 * H)]
    url = ["--provider-url", httpserver.url_for("")]
    assert main(["intensity", "fetch", "--site", "gbdc", *span, *args, *url]) == 1  # not everything stored
    out, err = capsys.readouterr()
    assert "stored 1 hours in ledger series ukgrid:GB" in out
    assert (
        "ukgrid GB: 1 of 2 hours" in err and "1 hours (2026-03-29T01:00Z .. 2026-03-29T01:00Z) missing" in err
    )
    httpserver.clear()
    assert main(["intensity", "hours", "--site", "gbdc", *span, *args, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith('2026-03-29T00:00Z,0.1,no,"NESO carbon intensity API, zone GB, actual')
    assert lines[2].startswith("2026-03-29T01:00Z,0.3,yes,\"not fetched: the site's constant, 0.3 kg/kWh")


def test_a_provider_failure_is_one_line_and_exit_2(
    httpserver: HTTPServer,
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ELECTRICITYMAPS_TOKEN", "tok-123")
    httpserver.expect_request("/v3/carbon-intensity/past-range").respond_with_json(
        {"message": "Zone 'DE' is not available with your plan"}, status=403
    )
    span = ["--start", str(T0), "--end", str(T0 + H), "--provider-url", httpserver.url_for("")]
    assert main(["intensity", "fetch", "--site", "emdc", *span, *args]) == 2
    err = capsys.readouterr().err
    assert "HTTP 403" in err and "not available with your plan" in err and "tok-123" not in err
    assert len(err.strip().splitlines()) == 1


def test_forecast_shows_the_cleanest_window(
    httpserver: HTTPServer, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    grams = [300, 250, 120, 100, 180, 400]  # hourly forecast from T0
    halves = [_half(T0 + i * 1800, grams[i // 2]) for i in range(2 * len(grams))]
    httpserver.expect_request(re.compile(r"/intensity/[^/]+/fw48h")).respond_with_json({"data": halves})
    sites = args[:2]
    url = ["--provider-url", httpserver.url_for("")]
    assert (
        main(["intensity", "forecast", "--site", "gbdc", "--hours", "2", "--power-kw", "500", *sites, *url])
        == 0
    )
    out = " ".join(capsys.readouterr().out.split())
    # hand check: from T0+2h, (0.120 + 0.100) / 2 = 0.11 against (0.300 + 0.250) / 2 = 0.275 from now;
    # 500 kW x 1.2 x (0.55 - 0.22) kg/kWh = 198 kg
    assert "start at 2026-03-29T02:00Z: mean 0.11 kg/kWh against 0.275" in out
    assert "60.0% less; saves 0.198 t CO2e at 500 kW IT, PUE 1.2" in out


def test_a_site_without_a_provider_is_told_how_to_name_one(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["intensity", "forecast", "--site", "jupiter", "--hours", "2", *args[:2]]) == 2
    assert "not a live provider: set [sites.jupiter.intensity] source" in capsys.readouterr().err


def test_eia_fetch_stores_grid_water_shown_beside_the_constant(
    httpserver: HTTPServer,
    tmp_path: Path,
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EIA_API_KEY", "k-456")
    sites = Path(args[1])
    ercot = "\n[sites.ercot]\npue = 1.2\nwue_onsite_l_per_kwh = 0.0\nwue_offsite_l_per_kwh = 1.29\n"
    ercot += (
        'carbon_intensity_kg_per_kwh = 0.332\n[sites.ercot.intensity]\nsource = "eia-api"\nzone = "ERCO"\n'
    )
    sites.write_text(SITES + ercot, encoding="utf-8")
    rows = [
        {"period": iso_hour(T0 + H)[:13], "respondent": "ERCO", "fueltype": f, "value": 100}
        for f in ("COL", "WND")
    ]
    httpserver.expect_request("/v2/electricity/rto/fuel-type-data/data/").respond_with_json(
        {"response": {"total": 2, "data": rows}}
    )
    span = ["--start", iso_hour(T0), "--end", iso_hour(T0 + 2 * H)]
    url = ["--provider-url", httpserver.url_for("")]
    assert (
        main(["intensity", "fetch", "--site", "ercot", *span, *args, *url]) == 1
    )  # the second hour is missing
    assert "stored 1 hours of grid water in ledger series water:eia-api:ERCO" in capsys.readouterr().out
    assert main(["intensity", "hours", "--site", "ercot", *span, *args, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # coal and wind half and half: (0.820 + 0.011) / 2 = 0.4155 kg/kWh; (2.601 + 0) / 2 = 1.3005 L/kWh
    assert lines[1].startswith("2026-03-29T00:00Z,0.4155,no,") and ",1.301,1.29,grid mix of ERCO" in lines[1]
    assert ',0.332,yes,"not fetched' in lines[2] and ',1.29,1.29,"no fuel mix' in lines[2]


def test_fetch_a_runs_hours_and_a_provider_without_forecast(
    httpserver: HTTPServer,
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.clock import FakeClock

    clock = FakeClock(0.0, wall_offset_s=T0 + 600)
    ledger = Ledger(make_engine(args[3]), clock)
    ledger.start_run("r")
    clock.sleep(3000.0)
    ledger.end_run("r")  # 00:10Z .. 01:00Z: one hour
    halves = [_half(T0, 100), _half(T0 + 1800, 100)]
    httpserver.expect_request(f"/intensity/{iso_hour(T0)}/{iso_hour(T0 + H)}").respond_with_json(
        {"data": halves}
    )
    url = ["--provider-url", httpserver.url_for("")]
    assert main(["intensity", "fetch", "--site", "gbdc", "--run", "r", *args, *url]) == 0
    assert "stored 1 hours in ledger series ukgrid:GB" in capsys.readouterr().out
    monkeypatch.setenv("EIA_API_KEY", "k")
    sites = Path(args[1])
    sites.write_text(SITES.replace('"electricitymaps-api"', '"eia-api"'), encoding="utf-8")
    assert main(["intensity", "forecast", "--site", "emdc", "--hours", "1", *args[:2]]) == 2
    assert "eia-api gives no forecast for zone DE" in capsys.readouterr().err
