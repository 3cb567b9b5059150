"""One HTTP client for every provider: JSON over GET, retries with backoff, secrets never shown.

A provider's key comes from the environment (:func:`env_secret`), never from an argument
or a log; every message this module builds has each secret replaced by ``***``, including
the URL of a provider (EIA) that takes its key in the query string.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import Message
from functools import partial
from typing import Any

from wattlog.accounting.carbon.intensity.base import HourlySeries, HourProvenance
from wattlog.accounting.carbon.intensity.hours import hour_start_s, iso_hour
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError, UntrustedInput, WattlogError
from wattlog.http_body import MAX_BODY_BYTES, read_body
from wattlog.http_exchange import open_url
from wattlog.masking import mask

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Answers worth asking again: rate limited, or the provider briefly down."""


class ProviderError(WattlogError):
    """A provider could not be reached, refused the request or answered with something unreadable.

    Attributes:
        provider: The provider's name.
        status: The HTTP status (None when no answer came).
    """

    def __init__(self, provider: str, message: str, status: int | None = None) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.status = status


def env_secret(variable: str, provider: str, environ: Mapping[str, str] | None = None) -> str:
    """The secret in environment variable `variable`.

    Raises:
        ConfigError: The variable is unset or empty; the message names it (never its value).
    """
    value = (os.environ if environ is None else environ).get(variable, "").strip()
    if not value:
        raise ConfigError(f"{provider} needs a key: set {variable} in the environment")
    return value


@dataclass(frozen=True, slots=True)
class Fetch:
    """What a provider returned for one zone: the hours it had and those it lacked.

    Attributes:
        series: The hours it gave, each with its provenance (provider, zone, kind, fetched at).
        missing: Hour starts (Unix s) asked for that it did not give.
    """

    series: HourlySeries
    missing: tuple[int, ...] = ()


def hour_provenance(provider: str, zone: str, kind: str, factor: str, fetched_s: float) -> HourProvenance:
    """One fetched hour's provenance: provider, zone, actual/estimated/forecast, factor, when fetched.

    Args:
        provider: E.g. "Electricity Maps API".
        zone: The provider's zone (grid region, balancing authority).
        kind: "actual", "estimated" or "forecast"; anything but "actual" is marked estimated.
        factor: "direct", "lifecycle", "marginal" or the factors used ("IPCC life-cycle per fuel").
        fetched_s: When it was fetched, Unix s.
    """
    fetched = iso_hour(int(fetched_s))
    return HourProvenance(f"{provider}, zone {zone}, {kind}, {factor}, fetched {fetched}", kind != "actual")


def hours_between(start_s: float, end_s: float) -> list[int]:
    """The starts of the clock hours that [start_s, end_s) touches."""
    return list(
        range(
            hour_start_s(start_s), int(end_s) if end_s % HOUR_S == 0 else hour_start_s(end_s) + HOUR_S, HOUR_S
        )
    )


def iso_second(t_s: float) -> str:
    """E.g. "2026-01-01T00:00:00Z", as providers take times in queries."""
    return datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def chunks(hours: Sequence[int], size: int) -> list[list[int]]:
    """`hours` cut into runs of at most `size` (a provider's longest range per request)."""
    return [list(hours[i : i + size]) for i in range(0, len(hours), size)]


def hourly_means(points: Sequence[tuple[float, float]], per_hour: int) -> dict[int, float]:
    """Each clock hour's mean of sub-hourly values; an hour with under `per_hour` points is left out."""
    grouped: dict[int, list[float]] = {}
    for t_s, value in points:
        grouped.setdefault(hour_start_s(t_s), []).append(value)
    return {h: sum(v) / len(v) for h, v in sorted(grouped.items()) if len(v) >= per_hour}


def assemble(
    values: Mapping[int, float], provenance: Mapping[int, HourProvenance], origin: str, wanted: Sequence[int]
) -> Fetch:
    """The hours of `wanted` a provider gave (others it gave are dropped), and those it lacked."""
    kept = {h: values[h] for h in wanted if h in values}
    series = HourlySeries(kept, origin, {h: provenance[h] for h in kept})
    return Fetch(series, tuple(h for h in wanted if h not in values))


@dataclass(slots=True)
class HttpClient:
    """GET JSON from one provider, retrying rate limits and outages with exponential backoff.

    Attributes:
        provider: The provider's name, for messages.
        base_url: E.g. "https://api.electricitymap.org" (tests: a local server's URL).
        secrets: Values never to show (keys, tokens); replaced by ``***`` in every message.
        opener: urlopen-compatible function.
        sleep: Waits between tries (injected so tests do not wait).
        retries: Tries after the first for a retryable answer.
        backoff_s: The first wait; each next one doubles, or the provider's Retry-After (capped).
        timeout_s: Per request, the whole answer (connect, headers and body), seconds.
        max_bytes: Largest answer read; a longer one is refused.
    """

    provider: str
    base_url: str
    secrets: Sequence[str] = ()
    opener: Callable[..., Any] = open_url  # urlopen bounds each read, not the status line and headers
    sleep: Callable[[float], None] = time.sleep
    retries: int = 3
    backoff_s: float = 1.0
    timeout_s: float = 30.0
    max_wait_s: float = 60.0
    max_bytes: int = MAX_BODY_BYTES

    def get_json(
        self,
        path: str,
        params: Mapping[str, str] | Sequence[tuple[str, str]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """The decoded JSON answer to GET `path` with `params`.

        Raises:
            ProviderError: Unreachable after the retries, a non-retryable status, or not JSON;
                the message carries the provider's own error text where it gave one.
        """
        query = urllib.parse.urlencode(params)
        url = f"{self.base_url.rstrip('/')}/{path.lstrip('/')}" + (f"?{query}" if query else "")
        if not url.startswith(("http://", "https://")):  # never file: or a custom scheme
            raise self._error(f"{url} is not an http(s) URL; check --base-url")
        request = urllib.request.Request(url, headers=dict(headers or {}))  # noqa: S310 - http(s) checked above
        wait_s = self.backoff_s
        opener = partial(open_url, max_bytes=self.max_bytes) if self.opener is open_url else self.opener
        for attempt in range(self.retries + 1):
            try:
                deadline = time.monotonic() + self.timeout_s  # the whole answer, not each read
                with opener(request, timeout=self.timeout_s) as response:
                    body = read_body(response, deadline=deadline, max_bytes=self.max_bytes, source=url)
                break
            except UntrustedInput as error:  # an endless or giant answer: not retried
                raise self._error(str(error)) from None
            except urllib.error.HTTPError as error:
                status, detail = error.code, _detail(error)
                if status not in RETRY_STATUSES or attempt == self.retries:
                    raise self._error(f"HTTP {status} for {url}{detail}", status) from None
                wait_s = _retry_after(error.headers, wait_s, self.max_wait_s)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                if attempt == self.retries:
                    reason = getattr(error, "reason", error)
                    raise self._error(f"cannot reach {url}: {reason}") from None
            log.warning(
                "%s: retrying in %.1f s (try %d of %d)", self.provider, wait_s, attempt + 2, self.retries + 1
            )
            self.sleep(wait_s)
            wait_s = min(wait_s * 2, self.max_wait_s)
        try:
            return json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise self._error(f"{url} did not answer JSON") from None

    def fail(self, message: str) -> ProviderError:
        """A ProviderError about this provider, secrets hidden (for a response of the wrong shape)."""
        return self._error(message)

    def _error(self, message: str, status: int | None = None) -> ProviderError:
        return ProviderError(self.provider, mask(message, self.secrets), status)


def _detail(error: urllib.error.HTTPError) -> str:
    """The provider's own words about an error (its body, shortened), or nothing."""
    try:
        text = error.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return f": {' '.join(text.split())[:200]}" if text else ""


def _retry_after(headers: Message | None, default_s: float, cap_s: float) -> float:
    """The provider's Retry-After in seconds (capped), else the backoff's next wait."""
    raw = headers.get("Retry-After") if headers is not None else None
    try:
        return min(max(float(raw), 0.0), cap_s) if raw is not None else default_s
    except ValueError:
        return default_s
