"""WattTime API v3: marginal (co2_moer) or average (co2_aoer, where licensed) emissions of a region.

``GET /login`` with HTTP Basic auth (``WATTTIME_USER``, ``WATTTIME_PASSWORD``) answers
``{"token": T}``, sent as ``Authorization: Bearer T``. ``GET /v3/historical?region=R&start=ISO&
end=ISO&signal_type=S`` (at most 32 days a request) and ``GET /v3/forecast?region=R&signal_type=S``
answer ``{"data": [{"point_time", "value"}], "meta": {"units", "data_point_period_seconds",
"region", "signal_type", ...}}``. Points are every 5 minutes in pounds per MWh: an hour is the
mean of its points (an hour missing any is missing), times 0.45359237 kg/lb / 1000 kWh/MWh.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from wattlog.accounting.carbon.intensity.hours import timestamp_s
from wattlog.accounting.carbon.intensity.live.client import (
    Fetch,
    HttpClient,
    assemble,
    chunks,
    hour_provenance,
    hourly_means,
    hours_between,
    iso_second,
)
from wattlog.accounting.units import HOUR_S

NAME = "watttime"
USER_ENV = "WATTTIME_USER"
PASSWORD_ENV = "WATTTIME_PASSWORD"  # noqa: S105 - the name of an environment variable, not a secret
BASE_URL = "https://api.watttime.org"
KG_PER_LB = 0.45359237
MAX_HOURS = 30 * 24
UNITS = "lbs_co2_per_mwh"
_FACTORS = {"co2_moer": "marginal", "co2_aoer": "average"}


@dataclass(slots=True)
class WattTime:
    """WattTime's v3 API for one account; logs in once, on the first request.

    Attributes:
        client: The HTTP client (its secrets hold the password and, once known, the token).
        user: The account's user name.
        password: Its password.
        clock: Unix seconds now.
        progress: Told after each request.
        signal: "co2_moer" (marginal) or "co2_aoer" (average, where the account is licensed).
    """

    client: HttpClient
    user: str
    password: str
    clock: Callable[[], float]
    progress: Callable[[str], None] = lambda _: None
    signal: str = "co2_moer"
    _token: str = field(default="", init=False)

    def history(self, zone: str, start_s: float, end_s: float) -> Fetch:
        """The hours of [start_s, end_s) in region `zone`.

        Raises:
            ProviderError: Login refused, a region the account may not read, an outage, a bad answer.
        """
        wanted = hours_between(start_s, end_s)
        values: dict[int, float] = {}
        for chunk in chunks(wanted, MAX_HOURS):
            params = {
                "region": zone,
                "start": iso_second(chunk[0]),
                "end": iso_second(chunk[-1] + HOUR_S - 1),
            }
            values.update(self._hours(self._get("/v3/historical", params)))
            self.progress(f"{NAME} {zone}: {len(values)} of {len(wanted)} hours")
        fetched_s = self.clock()
        provenance = {h: hour_provenance("WattTime", zone, "actual", self._factor, fetched_s) for h in values}
        return assemble(values, provenance, f"{NAME} {zone} ({self.signal})", wanted)

    def forecast(self, zone: str) -> Fetch:
        """WattTime's forecast for the coming hours of region `zone`, each marked forecast."""
        values = self._hours(self._get("/v3/forecast", {"region": zone}))
        fetched_s = self.clock()
        provenance = {
            h: hour_provenance("WattTime", zone, "forecast", self._factor, fetched_s) for h in values
        }
        return assemble(values, provenance, f"{NAME} {zone} forecast ({self.signal})", sorted(values))

    @property
    def _factor(self) -> str:
        return f"{_FACTORS.get(self.signal, self.signal)} ({self.signal})"

    def _get(self, path: str, params: Mapping[str, str]) -> Any:
        if not self._token:
            self._token = self._login()
        headers = {"Authorization": f"Bearer {self._token}"}
        return self.client.get_json(path, {**params, "signal_type": self.signal}, headers)

    def _login(self) -> str:
        basic = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        self.client.secrets = (*self.client.secrets, basic)
        answer = self.client.get_json("/login", (), {"Authorization": f"Basic {basic}"})
        token = answer.get("token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise self.client.fail("login answered no token: check WATTTIME_USER and WATTTIME_PASSWORD")
        self.client.secrets = (*self.client.secrets, token)
        return token

    def _hours(self, answer: Any) -> dict[int, float]:
        """kg/kWh per complete hour of a historical or forecast answer."""
        meta = answer.get("meta") if isinstance(answer, dict) else None
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(meta, dict) or not isinstance(data, list):
            raise self.client.fail(f"expected {{'data': [...], 'meta': {{...}}}}, got {str(answer)[:200]}")
        if meta.get("units") != UNITS:
            raise self.client.fail(
                f"signal {self.signal} came in {meta.get('units')!r}, not {UNITS}: not an emission rate "
                "(the account may be licensed for the index only)"
            )
        period_s = int(meta.get("data_point_period_seconds") or 300)
        try:
            points = [(timestamp_s(str(p["point_time"])), float(p["value"])) for p in data]
        except (KeyError, TypeError, ValueError):
            raise self.client.fail("a point without point_time or a numeric value") from None
        means = hourly_means(points, max(HOUR_S // period_s, 1))
        return {h: lbs * KG_PER_LB / 1000.0 for h, lbs in means.items()}
