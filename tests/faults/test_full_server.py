"""Fault: a ledger server that is full (max connections reached), not down.

On 38e5f82 every connection the server refused was asked again for up to 30 s, write after
write: a 10 s command's run exited 203 s after the command ended. Now only the process's
first connection (the start) waits that long; once one succeeded, a refusal is retried for
at most ``running_retry_s`` (2 s), then it is an outage like a down server (the rows spool),
and while the server keeps refusing every later connect is tried once, at once.
"""

from __future__ import annotations

import pytest

from tests.accounting.test_ledger_connections import Clock, Server, retry
from wattlog.accounting.ledger.connections import Connections


def test_a_server_full_during_the_run_costs_one_bounded_wait_then_single_tries() -> None:
    clock, connections = Clock(), Connections()
    assert retry(Server(refusals=8), connections, clock) == "connection"  # the start waits: ~6 s of 30
    start_s = clock.now_s
    full = Server(refusals=10_000)
    with pytest.raises(OSError, match="too many clients"):
        retry(full, connections, clock)
    assert clock.now_s - start_s <= 2.0  # 38e5f82: 30 s for this write, and for every next one
    for _ in range(5):  # every later write, the run's end, its events: one try each, no wait
        tries, waited_s = full.tries, clock.now_s
        with pytest.raises(OSError):
            retry(full, connections, clock)
        assert (full.tries - tries, clock.now_s - waited_s) == (1, 0.0)
    assert retry(Server(refusals=0), connections, clock) == "connection"  # a slot is free again
    again = Server(refusals=3)
    assert retry(again, connections, clock) == "connection" and again.tries == 4  # a short wait again
