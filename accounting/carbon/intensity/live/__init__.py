"""Live intensity providers: hourly carbon intensity fetched over HTTP, cached in the ledger.

- ``client``: :class:`HttpClient` (retries with backoff, rate limits, secrets kept out of
  messages), :class:`ProviderError`, :func:`env_secret`, :class:`Fetch` (what each provider returns).
- ``electricitymaps_api``, ``watttime``, ``ukgrid``, ``eia_api``: one module per provider.
- ``providers``: the providers by name (:func:`open_provider`).
- ``cache``: fetch a site's hours into the ledger, read them back with a labelled fallback.
- ``window``: the cleanest window to start a job of N hours, from a forecast.
"""

from __future__ import annotations

from wattlog.accounting.carbon.intensity.live.client import Fetch, HttpClient, ProviderError, env_secret

__all__ = ["Fetch", "HttpClient", "ProviderError", "env_secret"]
