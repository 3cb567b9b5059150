"""Each live provider against its documented response shapes, errors, rate limits, gaps and DST."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.accounting.live.conftest import NOW, T0
from wattlog.accounting.carbon.intensity.hours import iso_hour
from wattlog.accounting.carbon.intensity.live.client import ProviderError, iso_second
from wattlog.accounting.carbon.intensity.live.electricitymaps_api import ElectricityMapsApi
from wattlog.accounting.carbon.intensity.live.providers import ProviderContext, open_provider
from wattlog.errors import ConfigError

H = 3600
TOKEN = "em-secret-token"


def _em_point(t_s: int, grams: float, estimated: bool = False) -> dict[str, object]:
    return {
        "zone": "DE",
        "carbonIntensity": grams,
        "datetime": iso_second(t_s).replace("Z", ".000Z"),
        "updatedAt": "2026-03-30T00:00:00.000Z",
        "isEstimated": estimated,
        "estimationMethod": "TIME_SLICER_AVERAGE" if estimated else None,
        "emissionFactorType": "direct",
    }


def test_electricitymaps_reads_hours_with_provenance_and_names_the_gap(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    answer = {"zone": "DE", "data": [_em_point(T0, 300), _em_point(T0 + H, 250, estimated=True)]}
    httpserver.expect_request(
        "/v3/carbon-intensity/past-range",
        headers={"auth-token": TOKEN},
        query_string={
            "zone": "DE",
            "start": iso_second(T0),
            "end": iso_second(T0 + 3 * H),
            "emissionFactorType": "direct",
        },
    ).respond_with_json(answer)
    provider = open_provider("electricitymaps-api", context(ELECTRICITYMAPS_TOKEN=TOKEN))
    fetched = provider.history("DE", T0, T0 + 3 * H)
    assert dict(fetched.series.kg_per_kwh_by_hour) == {T0: 0.3, T0 + H: 0.25}
    assert fetched.missing == (T0 + 2 * H,)
    first, second = (fetched.series.provenance[h] for h in (T0, T0 + H))
    assert first.source == f"Electricity Maps API, zone DE, actual, direct, fetched {iso_hour(NOW)}"
    assert not first.estimated
    assert second.estimated and ", estimated, " in second.source


def test_refused_token_is_one_line_without_the_token(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    httpserver.expect_request("/v3/carbon-intensity/past-range").respond_with_json(
        {"status": "error", "message": f"Invalid auth-token {TOKEN}"}, status=401
    )
    provider = open_provider("electricitymaps-api", context(ELECTRICITYMAPS_TOKEN=TOKEN))
    with pytest.raises(ProviderError) as raised:
        provider.history("DE", T0, T0 + H)
    message = str(raised.value)
    assert raised.value.status == 401 and "\n" not in message
    assert TOKEN not in message and "Invalid auth-token ***" in message


def test_unknown_zone_carries_the_providers_words(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    httpserver.expect_request("/v3/carbon-intensity/past-range").respond_with_json(
        {"status": "error", "message": "Zone 'XX' does not exist."}, status=404
    )
    provider = open_provider("electricitymaps-api", context(ELECTRICITYMAPS_TOKEN=TOKEN))
    with pytest.raises(ProviderError, match="HTTP 404.*Zone 'XX' does not exist"):
        provider.history("XX", T0, T0 + H)


def test_rate_limit_waits_as_told_then_succeeds(
    httpserver: HTTPServer, context: Callable[..., ProviderContext], sleeps: list[float]
) -> None:
    path = "/v3/carbon-intensity/past-range"
    httpserver.expect_ordered_request(path).respond_with_response(
        Response("slow down", status=429, headers={"Retry-After": "7"})
    )
    httpserver.expect_ordered_request(path).respond_with_response(Response("down", status=503))
    httpserver.expect_ordered_request(path).respond_with_json({"zone": "DE", "data": [_em_point(T0, 100)]})
    provider = open_provider("electricitymaps-api", context(ELECTRICITYMAPS_TOKEN=TOKEN))
    assert dict(provider.history("DE", T0, T0 + H).series.kg_per_kwh_by_hour) == {T0: 0.1}
    assert sleeps == [7.0, 14.0]  # Retry-After, then the backoff doubles


def test_outage_past_the_retries_is_an_error(
    httpserver: HTTPServer,
    context: Callable[..., ProviderContext],
    sleeps: list[float],
    caplog: pytest.LogCaptureFixture,
) -> None:
    httpserver.expect_request("/v3/carbon-intensity/past-range").respond_with_response(
        Response("down", status=503)
    )
    provider = open_provider("electricitymaps-api", context(ELECTRICITYMAPS_TOKEN=TOKEN))
    with pytest.raises(ProviderError, match="HTTP 503"):
        provider.history("DE", T0, T0 + H)
    assert len(sleeps) == 2
    assert "retrying" in caplog.text and TOKEN not in caplog.text  # the retries are logged, never the key


def test_watttime_average_signal_where_licensed(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    httpserver.expect_request("/login").respond_with_json({"token": "wt-jwt"})
    meta = {**_wt_meta(), "signal_type": "co2_aoer"}
    httpserver.expect_request(
        "/v3/historical",
        query_string={
            "region": "CAISO_NORTH",
            "start": iso_second(T0),
            "end": iso_second(T0 + H - 1),
            "signal_type": "co2_aoer",
        },
    ).respond_with_json({"data": _wt_points(T0, 12, 600.0), "meta": meta})
    fetched = open_provider("watttime-average", context(WATTTIME_USER="u", WATTTIME_PASSWORD="p")).history(
        "CAISO_NORTH", T0, T0 + H
    )
    assert fetched.series.kg_per_kwh_by_hour[T0] == pytest.approx(600 * 0.45359237 / 1000)
    assert "average (co2_aoer)" in fetched.series.provenance[T0].source


def test_a_missing_key_names_the_variable(context: Callable[..., ProviderContext]) -> None:
    with pytest.raises(ConfigError, match="set ELECTRICITYMAPS_TOKEN in the environment"):
        open_provider("electricitymaps-api", context())
    with pytest.raises(ConfigError, match="unknown intensity provider 'nope'"):
        open_provider("nope", context())


def _wt_points(start_s: int, count: int, lbs: float) -> list[dict[str, object]]:
    return [
        {"point_time": iso_second(start_s + 300 * i).replace("Z", "+00:00"), "value": lbs}
        for i in range(count)
    ]


def _wt_meta(units: str = "lbs_co2_per_mwh") -> dict[str, object]:
    return {
        "data_point_period_seconds": 300,
        "region": "CAISO_NORTH",
        "signal_type": "co2_moer",
        "units": units,
        "warnings": [],
    }


def test_watttime_logs_in_and_converts_pounds_per_mwh(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    httpserver.expect_request("/login").respond_with_json({"token": "wt-jwt"})
    points = _wt_points(T0, 12, 1000.0) + _wt_points(T0 + H, 11, 500.0)  # the second hour lacks a point
    httpserver.expect_request(
        "/v3/historical",
        headers={"Authorization": "Bearer wt-jwt"},
        query_string={
            "region": "CAISO_NORTH",
            "start": iso_second(T0),
            "end": iso_second(T0 + 2 * H - 1),
            "signal_type": "co2_moer",
        },
    ).respond_with_json({"data": points, "meta": _wt_meta()})
    provider = open_provider("watttime", context(WATTTIME_USER="me", WATTTIME_PASSWORD="pw-secret"))
    fetched = provider.history("CAISO_NORTH", T0, T0 + 2 * H)
    assert fetched.series.kg_per_kwh_by_hour[T0] == pytest.approx(0.45359237)  # 1000 lb/MWh
    assert fetched.missing == (T0 + H,)
    assert "marginal (co2_moer)" in fetched.series.provenance[T0].source
    login = httpserver.log[0][0]
    assert login.headers["Authorization"].startswith("Basic ") and "pw-secret" not in login.url


def test_watttime_index_only_account_is_refused(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    httpserver.expect_request("/login").respond_with_json({"token": "wt-jwt"})
    httpserver.expect_request("/v3/historical").respond_with_json(
        {"data": _wt_points(T0, 12, 40.0), "meta": _wt_meta("percentile")}
    )
    provider = open_provider("watttime", context(WATTTIME_USER="me", WATTTIME_PASSWORD="pw"))
    with pytest.raises(ProviderError, match="not an emission rate"):
        provider.history("CAISO_NORTH", T0, T0 + H)


def _uk_half(start_s: int, forecast: float, actual: float | None) -> dict[str, object]:
    return {
        "from": iso_hour(start_s),
        "to": iso_hour(start_s + 1800),
        "intensity": {"forecast": forecast, "actual": actual, "index": "moderate"},
    }


def test_ukgrid_halves_make_hours_across_the_summer_time_change(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    halves = [
        _uk_half(T0, 200, 210),
        _uk_half(T0 + 1800, 200, 190),  # 00:00-01:00Z: both actual -> 0.200
        _uk_half(T0 + H, 150, 160),
        _uk_half(T0 + H + 1800, 120, None),  # 01:00Z, the clocks go forward: no actual yet -> forecast
        _uk_half(T0 + 2 * H, 100, 100),  # 02:00Z: half an hour only -> missing
    ]
    httpserver.expect_request(f"/intensity/{iso_hour(T0)}/{iso_hour(T0 + 3 * H)}").respond_with_json(
        {"data": halves}
    )
    fetched = open_provider("ukgrid", context()).history("GB", T0, T0 + 3 * H)
    assert dict(fetched.series.kg_per_kwh_by_hour) == pytest.approx({T0: 0.2, T0 + H: 0.14})
    assert fetched.missing == (T0 + 2 * H,)
    assert not fetched.series.provenance[T0].estimated
    assert ", forecast, " in fetched.series.provenance[T0 + H].source


def test_ukgrid_serves_gb_only(context: Callable[..., ProviderContext]) -> None:
    with pytest.raises(ConfigError, match="zone GB only"):
        open_provider("ukgrid", context()).history("FR", T0, T0 + H)


def test_eia_pages_generation_by_fuel_hour_ending_and_hides_the_key(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    def row(end_s: int, fuel: str, mwh: float) -> dict[str, object]:
        period = iso_second(end_s)[:13]
        return {"period": period, "respondent": "ERCO", "fueltype": fuel, "value": mwh, "value-units": "MWh"}

    rows = [
        row(T0 + H, "COL", 100),
        row(T0 + H, "WND", 100),
        row(T0 + 2 * H, "NG", 50),
        row(T0 + 2 * H, "SUN", 0),
    ]

    def page(request: Request) -> Response:
        assert request.args["api_key"] == "eia-key" and request.args["facets[respondent][]"] == "ERCO"
        offset = int(request.args["offset"])
        body = {"response": {"total": len(rows), "data": rows[offset : offset + 2]}}
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request("/v2/electricity/rto/fuel-type-data/data/").respond_with_handler(page)
    fetched = open_provider("eia-api", context(EIA_API_KEY="eia-key")).history("ERCO", T0, T0 + 2 * H)
    assert dict(fetched.series.kg_per_kwh_by_hour) == pytest.approx({T0: (0.820 + 0.011) / 2, T0 + H: 0.490})
    assert len(httpserver.log) == 2 and fetched.missing == ()


def test_eia_refusal_hides_the_key_in_the_url(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    httpserver.expect_request("/v2/electricity/rto/fuel-type-data/data/").respond_with_json(
        {"error": "API_KEY_INVALID"}, status=403
    )
    with pytest.raises(ProviderError) as raised:
        open_provider("eia-api", context(EIA_API_KEY="eia-key")).history("ERCO", T0, T0 + H)
    assert "eia-key" not in str(raised.value) and "api_key=***" in str(raised.value)


def test_electricitymaps_forecast_hours_are_marked_forecast(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    points = [{"carbonIntensity": g, "datetime": iso_second(T0 + i * H)} for i, g in enumerate([200, 150])]
    httpserver.expect_request(
        "/v3/carbon-intensity/forecast", query_string={"zone": "DE", "emissionFactorType": "lifecycle"}
    ).respond_with_json({"zone": "DE", "forecast": points, "updatedAt": iso_second(T0)})
    fetched = open_provider("electricitymaps-api-lca", context(ELECTRICITYMAPS_TOKEN=TOKEN)).forecast("DE")
    assert dict(fetched.series.kg_per_kwh_by_hour) == {T0: 0.2, T0 + H: 0.15}
    where = fetched.series.provenance[T0]
    assert where.estimated and ", forecast, lifecycle," in where.source


def test_watttime_forecast_is_hourly_means(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    httpserver.expect_request("/login").respond_with_json({"token": "wt-jwt"})
    points = _wt_points(T0, 6, 1000.0) + _wt_points(T0 + 1800, 6, 2000.0)  # a mean of 1500 lb/MWh
    httpserver.expect_request("/v3/forecast").respond_with_json({"data": points, "meta": _wt_meta()})
    fetched = open_provider("watttime", context(WATTTIME_USER="u", WATTTIME_PASSWORD="p")).forecast(
        "CAISO_NORTH"
    )
    assert fetched.series.kg_per_kwh_by_hour[T0] == pytest.approx(1.5 * 0.45359237)
    assert ", forecast, " in fetched.series.provenance[T0].source


def test_electricitymaps_latest_is_one_hour(
    httpserver: HTTPServer, context: Callable[..., ProviderContext]
) -> None:
    httpserver.expect_request("/v3/carbon-intensity/latest").respond_with_json(
        _em_point(T0, 420, estimated=True)
    )
    provider = open_provider("electricitymaps-api", context(ELECTRICITYMAPS_TOKEN=TOKEN))
    assert isinstance(provider, ElectricityMapsApi)
    fetched = provider.latest("DE")
    assert dict(fetched.series.kg_per_kwh_by_hour) == {T0: 0.42} and fetched.series.provenance[T0].estimated
