"""Electricity Maps API v3: hourly carbon intensity of a zone, past and forecast.

``GET /v3/carbon-intensity/past-range?zone=Z&start=ISO&end=ISO`` (hourly, at most 10 days a
request) answers ``{"zone": Z, "data": [{"datetime", "carbonIntensity", "isEstimated",
"estimationMethod", "emissionFactorType", ...}]}``; ``/history`` (the last 24 hours) answers the
same points under ``"history"``; ``/forecast`` under ``"forecast"``; ``/latest`` is one point.
Intensity is gCO2eq/kWh.
The key goes in the ``auth-token`` header, from ``ELECTRICITYMAPS_TOKEN``. Direct (operational)
factors are asked for by default, as the OLMo 2 paper's figures are; ``lifecycle`` asks for
life-cycle ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wattlog.accounting.carbon.intensity.base import HourProvenance
from wattlog.accounting.carbon.intensity.hours import timestamp_s
from wattlog.accounting.carbon.intensity.live.client import (
    Fetch,
    HttpClient,
    assemble,
    chunks,
    hour_provenance,
    hours_between,
    iso_second,
)
from wattlog.accounting.units import HOUR_S

NAME = "electricitymaps-api"
TOKEN_ENV = "ELECTRICITYMAPS_TOKEN"  # noqa: S105 - the name of an environment variable, not a secret
BASE_URL = "https://api.electricitymap.org"
MAX_HOURS = 240
"""past-range's longest hourly span per request (10 days)."""


@dataclass(slots=True)
class ElectricityMapsApi:
    """Electricity Maps' v3 API for one account.

    Attributes:
        client: The HTTP client (its secrets hold the token).
        token: The auth token (from the environment).
        clock: Unix seconds now (the fetched-at of each hour).
        progress: Told after each request, e.g. "240 of 720 hours".
        lifecycle: Life-cycle factors instead of direct ones.
    """

    client: HttpClient
    token: str
    clock: Callable[[], float]
    progress: Callable[[str], None] = lambda _: None
    lifecycle: bool = False

    @property
    def factor(self) -> str:
        """ "lifecycle" or "direct"."""
        return "lifecycle" if self.lifecycle else "direct"

    def history(self, zone: str, start_s: float, end_s: float) -> Fetch:
        """The hours of [start_s, end_s) in `zone`, each marked actual or estimated.

        Raises:
            ProviderError: A refused request (unknown zone, bad token), an outage, a bad answer.
        """
        wanted = hours_between(start_s, end_s)
        values: dict[int, float] = {}
        provenance: dict[int, HourProvenance] = {}
        for chunk in chunks(wanted, MAX_HOURS):
            params = {
                "zone": zone,
                "start": iso_second(chunk[0]),
                "end": iso_second(chunk[-1] + HOUR_S),
                "emissionFactorType": self.factor,
            }
            answer = self.client.get_json("/v3/carbon-intensity/past-range", params, self._headers)
            self._read(_points(answer, "data", self.client), zone, values, provenance, forecast=False)
            self.progress(f"{NAME} {zone}: {len(values)} of {len(wanted)} hours")
        return assemble(values, provenance, f"{NAME} {zone} ({self.factor})", wanted)

    def forecast(self, zone: str) -> Fetch:
        """The provider's forecast for the coming hours of `zone`, each marked forecast."""
        params = {"zone": zone, "emissionFactorType": self.factor}
        answer = self.client.get_json("/v3/carbon-intensity/forecast", params, self._headers)
        values: dict[int, float] = {}
        provenance: dict[int, HourProvenance] = {}
        self._read(_points(answer, "forecast", self.client), zone, values, provenance, forecast=True)
        return assemble(values, provenance, f"{NAME} {zone} forecast ({self.factor})", sorted(values))

    def latest(self, zone: str) -> Fetch:
        """The current hour of `zone` (``/v3/carbon-intensity/latest``: one point, often estimated)."""
        params = {"zone": zone, "emissionFactorType": self.factor}
        answer = self.client.get_json("/v3/carbon-intensity/latest", params, self._headers)
        if not isinstance(answer, dict):
            raise self.client.fail(f"expected a JSON object, got {str(answer)[:200]}")
        values: dict[int, float] = {}
        provenance: dict[int, HourProvenance] = {}
        self._read([answer], zone, values, provenance, forecast=False)
        return assemble(values, provenance, f"{NAME} {zone} latest ({self.factor})", sorted(values))

    @property
    def _headers(self) -> dict[str, str]:
        return {"auth-token": self.token}

    def _read(
        self,
        points: Sequence[Mapping[str, Any]],
        zone: str,
        values: dict[int, float],
        provenance: dict[int, HourProvenance],
        *,
        forecast: bool,
    ) -> None:
        fetched_s = self.clock()
        for point in points:
            try:
                t_s = timestamp_s(str(point["datetime"]))
                grams = point["carbonIntensity"]
            except (KeyError, ValueError):
                raise self.client.fail(
                    f"a point without datetime or carbonIntensity: {dict(point)}"
                ) from None
            if grams is None or t_s % HOUR_S:
                continue  # no figure, or a sub-hourly point: the hour stays missing and is labelled so
            hour = int(t_s)
            values[hour] = float(grams) / 1000.0
            kind = "forecast" if forecast else ("estimated" if point.get("isEstimated") else "actual")
            provenance[hour] = hour_provenance("Electricity Maps API", zone, kind, self.factor, fetched_s)


def _points(answer: Any, key: str, client: HttpClient) -> list[Mapping[str, Any]]:
    points = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        raise client.fail(f"expected a JSON object with a list {key!r}, got {str(answer)[:200]}")
    return points
