"""Shared fixtures: a fake clock and the Debian server binaries the integration tests start."""

from __future__ import annotations

import pytest

from wattlog.clock import FakeClock


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock at t=0 that moves only when advanced (or slept on)."""
    return FakeClock()
