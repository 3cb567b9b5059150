"""The UK national grid's carbon-intensity API (NESO, carbonintensity.org.uk): half-hourly, no key.

``GET /intensity/{from}/{to}`` (ISO 8601 in UTC, at most 14 days) and ``GET
/intensity/{from}/fw48h`` (the next 48 hours) answer ``{"data": [{"from": "2026-01-01T00:00Z",
"to": "2026-01-01T00:30Z", "intensity": {"forecast": 266, "actual": 263, "index":
"moderate"}}]}`` in gCO2/kWh. An hour is the mean of its two halves; it is "actual" when both
halves have an actual figure, else the forecast stands in and the hour is marked so. The
national endpoint serves one zone, "GB". Times are UTC, so British Summer Time changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wattlog.accounting.carbon.intensity.base import HourProvenance
from wattlog.accounting.carbon.intensity.hours import hour_start_s, iso_hour, timestamp_s
from wattlog.accounting.carbon.intensity.live.client import (
    Fetch,
    HttpClient,
    assemble,
    chunks,
    hour_provenance,
    hours_between,
)
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError

NAME = "ukgrid"
BASE_URL = "https://api.carbonintensity.org.uk"
ZONE = "GB"
MAX_HOURS = 14 * 24
_FACTOR = "direct (NESO national)"


@dataclass(slots=True)
class UkGrid:
    """The national carbon-intensity API of Great Britain.

    Attributes:
        client: The HTTP client.
        clock: Unix seconds now.
        progress: Told after each request.
    """

    client: HttpClient
    clock: Callable[[], float]
    progress: Callable[[str], None] = lambda _: None

    def history(self, zone: str, start_s: float, end_s: float) -> Fetch:
        """The hours of [start_s, end_s), actual where NESO has it, else its forecast, marked so.

        Raises:
            ConfigError: A zone other than "GB".
            ProviderError: An outage or a bad answer.
        """
        _check(zone)
        wanted = hours_between(start_s, end_s)
        values: dict[int, float] = {}
        provenance: dict[int, HourProvenance] = {}
        for chunk in chunks(wanted, MAX_HOURS):
            path = f"/intensity/{iso_hour(chunk[0])}/{iso_hour(chunk[-1] + HOUR_S)}"
            self._read(self.client.get_json(path), values, provenance, forecast=False)
            self.progress(f"{NAME} {ZONE}: {len(values)} of {len(wanted)} hours")
        return assemble(values, provenance, f"{NAME} {ZONE}", wanted)

    def forecast(self, zone: str) -> Fetch:
        """NESO's forecast for the next 48 hours (whole hours only), each marked forecast."""
        _check(zone)
        now = hour_start_s(self.clock())
        values: dict[int, float] = {}
        provenance: dict[int, HourProvenance] = {}
        self._read(
            self.client.get_json(f"/intensity/{iso_hour(now)}/fw48h"), values, provenance, forecast=True
        )
        return assemble(values, provenance, f"{NAME} {ZONE} forecast", sorted(values))

    def _read(
        self, answer: Any, values: dict[int, float], provenance: dict[int, HourProvenance], *, forecast: bool
    ) -> None:
        halves: dict[int, list[tuple[float, bool]]] = {}
        for period in _periods(answer, self.client):
            figure = period["intensity"]
            actual = None if forecast else figure.get("actual")
            grams = actual if actual is not None else figure.get("forecast")
            if grams is None:
                continue
            start_s = timestamp_s(str(period["from"]))
            halves.setdefault(hour_start_s(start_s), []).append((float(grams), actual is not None))
        fetched_s = self.clock()
        for hour, parts in halves.items():
            if len(parts) != 2:
                continue  # half an hour: the hour stays missing and is labelled so
            values[hour] = sum(g for g, _ in parts) / 2 / 1000.0
            kind = "actual" if all(a for _, a in parts) else "forecast"
            provenance[hour] = hour_provenance("NESO carbon intensity API", ZONE, kind, _FACTOR, fetched_s)


def _periods(answer: Any, client: HttpClient) -> list[Mapping[str, Any]]:
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or not all(
        isinstance(p, dict) and "from" in p and isinstance(p.get("intensity"), dict) for p in data
    ):
        raise client.fail(f"expected {{'data': [{{'from', 'intensity'}}]}}, got {str(answer)[:200]}")
    return data


def _check(zone: str) -> None:
    if zone not in {"", ZONE}:
        raise ConfigError(f"{NAME} serves zone {ZONE} only (national), not {zone!r}")
