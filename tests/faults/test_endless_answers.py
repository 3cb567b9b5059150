"""Fault: an intensity provider whose answer never ends.

On 38e5f82 the run was recorded `finished` but `wattlog run` never exited (3 of 3 killed
at 150 s): the 10 s budget bounded the connect and each read, not the answer; a fast
endless body grew the process from 22 to 1,066 MiB in 25 s. Now every answer is read
within a total deadline and under a size cap (wattlog/http_body.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.accounting.live.test_at_close import SITES, _ended_run
from tests.faults.endless_server import endless_server
from wattlog.accounting.carbon.intensity.live.at_close import fetch_at_close
from wattlog.accounting.carbon.intensity.live.client import HttpClient, ProviderError
from wattlog.accounting.carbon.intensity.live.providers import ProviderContext
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, make_engine


def within(seconds: float, call: Callable[[], Any]) -> tuple[Any, float]:
    """`call()`'s result and duration; fails (instead of hanging) if it takes longer than `seconds`."""
    result: list[Any] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: result.append(_outcome(call)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still reading after {seconds} s"
    return result[0], time.monotonic() - started


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as error:  # the test asserts on it
        return error


def test_a_dripping_provider_does_not_hold_a_closing_run(tmp_path: Path) -> None:
    sites = tmp_path / "sites.toml"
    sites.write_text(SITES, encoding="utf-8")
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    _ended_run(ledger, 1_700_000_000, 1_700_003_600)
    with endless_server() as url:
        context = ProviderContext(environ={}, base_url=url, sleep=lambda s: None, retries=0)
        done, took_s = within(
            20, lambda: fetch_at_close(ledger, "r1", site_catalog(sites), context, budget_s=1.5)
        )
    assert done is not None and not done.ok and "did not end within the deadline" in done.line
    assert took_s < 5


def test_a_dripping_answer_is_cut_at_the_clients_deadline() -> None:
    with endless_server() as url:
        client = HttpClient("p", url, retries=0, timeout_s=1.0)
        error, took_s = within(20, lambda: client.get_json("x"))
    assert isinstance(error, ProviderError) and "did not end within the deadline" in str(error)
    assert took_s < 5


def test_a_flooding_answer_is_cut_at_the_cap() -> None:
    with endless_server(flood=True) as url:
        client = HttpClient("p", url, retries=0, timeout_s=30.0, max_bytes=4 << 20)
        error, took_s = within(20, lambda: client.get_json("x"))
    assert isinstance(error, ProviderError) and "longer than 4,194,304 bytes" in str(error)


def test_a_providers_head_dripping_a_byte_a_second_is_cut_at_the_deadline() -> None:
    # urlopen bounded each read of the status line and headers, not all of them (18aee5b: held for ever)
    with endless_server(every_s=1.0, drip_head=True) as url:
        client = HttpClient("p", url, retries=0, timeout_s=1.5)
        error, took_s = within(20, lambda: client.get_json("x"))
    assert isinstance(error, ProviderError) and "did not end within the deadline" in str(error)
    assert took_s < 4
