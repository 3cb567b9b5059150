"""Replayed provider answers: each provider's documented response shapes, served from a local HTTP server."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pytest_httpserver import HTTPServer

from wattlog.accounting.carbon.intensity.live.providers import ProviderContext

T0 = 1_774_742_400  # 2026-03-29T00:00Z: British Summer Time starts at 01:00Z that day
NOW = T0 + 30 * 3600


@pytest.fixture
def sleeps() -> list[float]:
    """The waits a client asked for (never slept)."""
    return []


@pytest.fixture
def context(httpserver: HTTPServer, sleeps: list[float]) -> Callable[..., ProviderContext]:
    """A context aimed at the local server, with keys in a fake environment and no real waiting."""

    def make(**environ: str) -> ProviderContext:
        return ProviderContext(
            environ=environ,
            base_url=httpserver.url_for(""),
            sleep=sleeps.append,
            clock=lambda: NOW,
            retries=2,
        )

    return make
