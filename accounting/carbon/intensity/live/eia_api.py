"""EIA's API v2: hourly generation by fuel of a balancing authority, turned into intensity.

``GET /v2/electricity/rto/fuel-type-data/data/?api_key=K&frequency=hourly&data[0]=value&
facets[respondent][]=BA&start=YYYY-MM-DDTHH&end=...&offset=N&length=5000`` answers
``{"response": {"total": N, "data": [{"period": "2026-01-01T05", "respondent": "ERCO",
"fueltype": "NG", "type-name": "Natural Gas", "value": 1234, "value-units": "megawatthours"}]}}``,
5000 rows a page. Periods are UTC; EIA-930 reports each hour by its end (the bulk files'
"UTC Time at End of Hour"), so a period starts an hour earlier. Checked: EIA's Grid Monitor
"About" page says hourly data are "published using the hour ending time reporting convention"
(quoted in electricitymaps/electricitymaps-contrib#4052), and gridstatus (PR #226) reads API v2
``region-data`` period 2020-01-01T00 as the interval 2019-12-31T23:00Z..2020-01-01T00:00Z. The
intensity of an hour is
its generation-weighted mean of the per-fuel factors already used for EIA-930 files
(:data:`~wattlog.accounting.carbon.intensity.eia930.EIA_FACTORS`). The key comes from ``EIA_API_KEY``
and travels in the query string, so every message hides it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from wattlog.accounting.carbon.intensity.base import HourProvenance
from wattlog.accounting.carbon.intensity.eia930 import mix_intensity
from wattlog.accounting.carbon.intensity.live.client import (
    Fetch,
    HttpClient,
    assemble,
    hour_provenance,
    hours_between,
)
from wattlog.accounting.carbon.plausible import implausible_mix
from wattlog.accounting.units import HOUR_S

NAME = "eia-api"
KEY_ENV = "EIA_API_KEY"
BASE_URL = "https://api.eia.gov"
PATH = "/v2/electricity/rto/fuel-type-data/data/"
PAGE = 5000
FUELS: Mapping[str, str] = {
    "COL": "Coal",
    "NG": "Natural Gas",
    "NUC": "Nuclear",
    "WAT": "Hydropower and Pumped Storage",
    "PS": "Hydropower and Pumped Storage",
    "SUN": "Solar",
    "WND": "Wind",
    "OIL": "All Petroleum Products",
    "OTH": "Other Fuel Sources",
    "UNK": "Unknown Fuel Sources",
}
"""EIA's fuel codes -> the EIA-930 fuel names that carry factors; any other code counts as "Other"."""


@dataclass(slots=True)
class EiaApi:
    """EIA's open-data API v2 for one key.

    Attributes:
        client: The HTTP client (its secrets hold the key).
        key: The API key (from the environment).
        clock: Unix seconds now.
        progress: Told after each page.
    """

    client: HttpClient
    key: str
    clock: Callable[[], float]
    progress: Callable[[str], None] = lambda _: None

    def generation(self, zone: str, start_s: float, end_s: float) -> dict[int, dict[str, float]]:
        """MWh by EIA-930 fuel name for each hour (start, Unix s) of [start_s, end_s) in authority `zone`.

        Raises:
            ProviderError: A refused key or authority, an outage, or a page of the wrong shape.
        """
        wanted = hours_between(start_s, end_s)
        by_hour: dict[int, dict[str, float]] = {}
        offset = 0
        while True:
            rows, total = self._page(zone, wanted[0], wanted[-1], offset)
            for row in rows:
                hour, fuel, mwh = self._row(row)
                mix = by_hour.setdefault(hour, {})
                mix[fuel] = mix.get(fuel, 0.0) + mwh
            offset += len(rows)
            self.progress(f"{NAME} {zone}: {offset} of {total} rows")
            if not rows or offset >= total:
                break
        return {h: by_hour[h] for h in wanted if h in by_hour}

    def history(self, zone: str, start_s: float, end_s: float) -> Fetch:
        """The hours of [start_s, end_s) in authority `zone`: generation by fuel x per-fuel factors."""
        return self.from_mixes(zone, hours_between(start_s, end_s), self.generation(zone, start_s, end_s))

    def from_mixes(self, zone: str, wanted: list[int], mixes: Mapping[int, Mapping[str, float]]) -> Fetch:
        """The intensity of each hour of `wanted` from its generation by fuel (:meth:`generation`)."""
        values: dict[int, float] = {}
        provenance: dict[int, HourProvenance] = {}
        fetched_s = self.clock()
        for hour, mix in mixes.items():
            mixed = mix_intensity(mix)
            if mixed is None or implausible_mix(mix):  # negative gas was once mixed in as 0: refused
                continue  # no generation reported, or impossible: the hour stays missing
            values[hour], assumed = mixed
            kind = "estimated" if assumed else "actual"
            provenance[hour] = hour_provenance(
                "EIA API v2", zone, kind, "IPCC life-cycle per fuel", fetched_s
            )
        return assemble(values, provenance, f"{NAME} {zone}", wanted)

    def forecast(self, zone: str) -> Fetch:
        """EIA publishes no intensity forecast: an empty fetch (the CLI says so)."""
        del zone
        return assemble({}, {}, f"{NAME} (no forecast)", [])

    def _page(self, zone: str, first: int, last: int, offset: int) -> tuple[list[Mapping[str, Any]], int]:
        params = [
            ("api_key", self.key),
            ("frequency", "hourly"),
            ("data[0]", "value"),
            ("facets[respondent][]", zone),
            ("start", _period(first + HOUR_S)),  # hour ending
            ("end", _period(last + HOUR_S)),
            ("sort[0][column]", "period"),
            ("sort[0][direction]", "asc"),
            ("offset", str(offset)),
            ("length", str(PAGE)),
        ]
        answer = self.client.get_json(PATH, params)
        response = answer.get("response") if isinstance(answer, dict) else None
        data = response.get("data") if isinstance(response, dict) else None
        if not isinstance(response, dict) or not isinstance(data, list):
            raise self.client.fail(f"expected {{'response': {{'data': [...]}}}}, got {str(answer)[:200]}")
        try:
            total = int(response.get("total", len(data)))
        except (TypeError, ValueError):
            raise self.client.fail(f"total {response.get('total')!r} is not a number") from None
        return data, total

    def _row(self, row: Mapping[str, Any]) -> tuple[int, str, float]:
        try:
            end = datetime.strptime(str(row["period"]), "%Y-%m-%dT%H").replace(tzinfo=UTC)
            mwh = float(row["value"]) if row.get("value") is not None else 0.0
        except (KeyError, TypeError, ValueError):
            raise self.client.fail(
                f"a row without an hourly period or a numeric value: {dict(row)}"
            ) from None
        fuel = FUELS.get(str(row.get("fueltype", "")), "Other Fuel Sources")
        return int(end.timestamp()) - HOUR_S, fuel, mwh


def _period(t_s: int) -> str:
    return datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%dT%H")
