from __future__ import annotations

import pytest

from wattlog.clock import FakeClock, SystemClock


def test_fake_clock_moves_only_when_told(fake_clock: FakeClock) -> None:
    assert fake_clock.monotonic() == 0.0
    fake_clock.sleep(0.025)
    fake_clock.advance(1.0)
    assert fake_clock.monotonic() == pytest.approx(1.025)
    assert fake_clock.wall() - fake_clock.monotonic() == pytest.approx(1_700_000_000.0)


def test_fake_clock_refuses_to_go_backwards(fake_clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="backwards"):
        fake_clock.advance(-1.0)


def test_system_clock_is_monotonic() -> None:
    clock = SystemClock()
    first = clock.monotonic()
    clock.sleep(0.001)
    assert clock.monotonic() > first
