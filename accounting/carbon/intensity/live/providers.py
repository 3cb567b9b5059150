"""The live providers by name: what each needs from the environment, and how to open it.

Each provider answers :meth:`LiveProvider.history` (the hours of a span) and
:meth:`LiveProvider.forecast` (the coming hours where it publishes them). Keys come
from the environment only (see each module); :class:`ProviderContext` carries every
side effect, so tests pass a local server's URL, a fake clock and no sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from wattlog.accounting.carbon.intensity.live import eia_api, electricitymaps_api, ukgrid, watttime
from wattlog.accounting.carbon.intensity.live.client import Fetch, HttpClient, env_secret
from wattlog.errors import ConfigError
from wattlog.http_exchange import open_url


class LiveProvider(Protocol):
    """Hourly intensity of a zone over HTTP."""

    def history(self, zone: str, start_s: float, end_s: float) -> Fetch:
        """The hours of [start_s, end_s) (Unix s) in `zone`, and those the provider lacked."""
        ...

    def forecast(self, zone: str) -> Fetch:
        """The coming hours the provider forecasts for `zone` (empty where it publishes none)."""
        ...


def _no_progress(message: str) -> None:
    del message


@dataclass(frozen=True, slots=True)
class ProviderContext:
    """What opening a provider may use.

    Attributes:
        environ: Where keys are read (None: the process environment).
        base_url: Another address for the provider's API (a proxy, a recorded replay); None: its own.
        opener: urlopen-compatible function.
        sleep: Waits between retries.
        clock: Unix seconds now (each hour's fetched-at).
        progress: Told after each request.
        retries: Retries of a rate-limited or failed request.
    """

    environ: Mapping[str, str] | None = None
    base_url: str | None = None
    opener: Callable[..., Any] = open_url  # urlopen bounds each read, not the status line and headers
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    progress: Callable[[str], None] = _no_progress
    retries: int = 3

    def client(self, provider: str, default_url: str, secrets: Sequence[str] = ()) -> HttpClient:
        """An HTTP client for `provider` with these side effects."""
        return HttpClient(
            provider, self.base_url or default_url, tuple(secrets), self.opener, self.sleep, self.retries
        )


def _electricitymaps(context: ProviderContext, lifecycle: bool) -> LiveProvider:
    name = electricitymaps_api.NAME
    token = env_secret(electricitymaps_api.TOKEN_ENV, name, context.environ)
    client = context.client(name, electricitymaps_api.BASE_URL, [token])
    return electricitymaps_api.ElectricityMapsApi(client, token, context.clock, context.progress, lifecycle)


def _watttime(context: ProviderContext, signal: str) -> LiveProvider:
    user = env_secret(watttime.USER_ENV, watttime.NAME, context.environ)
    password = env_secret(watttime.PASSWORD_ENV, watttime.NAME, context.environ)
    client = context.client(watttime.NAME, watttime.BASE_URL, [password])
    return watttime.WattTime(client, user, password, context.clock, context.progress, signal)


def _ukgrid(context: ProviderContext) -> LiveProvider:
    return ukgrid.UkGrid(context.client(ukgrid.NAME, ukgrid.BASE_URL), context.clock, context.progress)


def _eia(context: ProviderContext) -> LiveProvider:
    key = env_secret(eia_api.KEY_ENV, eia_api.NAME, context.environ)
    return eia_api.EiaApi(
        context.client(eia_api.NAME, eia_api.BASE_URL, [key]), key, context.clock, context.progress
    )


PROVIDERS: Mapping[str, tuple[str, Callable[[ProviderContext], LiveProvider]]] = {
    electricitymaps_api.NAME: (
        f"Electricity Maps API v3, direct (key: {electricitymaps_api.TOKEN_ENV})",
        lambda c: _electricitymaps(c, lifecycle=False),
    ),
    f"{electricitymaps_api.NAME}-lca": (
        f"Electricity Maps API v3, life-cycle (key: {electricitymaps_api.TOKEN_ENV})",
        lambda c: _electricitymaps(c, lifecycle=True),
    ),
    watttime.NAME: (
        f"WattTime v3 marginal, co2_moer (login: {watttime.USER_ENV}, {watttime.PASSWORD_ENV})",
        lambda c: _watttime(c, "co2_moer"),
    ),
    f"{watttime.NAME}-average": (
        f"WattTime v3 average, co2_aoer, if licensed (login: {watttime.USER_ENV}, {watttime.PASSWORD_ENV})",
        lambda c: _watttime(c, "co2_aoer"),
    ),
    ukgrid.NAME: ("NESO carbon intensity API, zone GB (no key)", _ukgrid),
    eia_api.NAME: (f"EIA API v2 generation by fuel (key: {eia_api.KEY_ENV})", _eia),
}
"""Provider name -> (what it is and which environment variables it reads, how to open it)."""


def open_provider(name: str, context: ProviderContext | None = None) -> LiveProvider:
    """The provider registered as `name`.

    Raises:
        ConfigError: Unknown provider, or its key is not in the environment.
    """
    try:
        _, factory = PROVIDERS[name]
    except KeyError:
        raise ConfigError(f"unknown intensity provider {name!r}: use {', '.join(PROVIDERS)}") from None
    return factory(context or ProviderContext())
