"""Connections to a network ledger: a bounded pool or none held, refusals retried with backoff."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool, QueuePool

from wattlog.accounting.ledger.connections import Connections, is_refusal, with_retries
from wattlog.accounting.ledger.engine import _network_engine
from wattlog.errors import ConfigError

FULL = "connection failed: FATAL:  sorry, too many clients already"


class Server:
    """Refuses the first `refusals` connects with `message`, then answers."""

    def __init__(self, refusals: int, message: str = FULL) -> None:
        self.refusals, self.message, self.tries = refusals, message, 0

    def connect(self) -> str:
        self.tries += 1
        if self.tries <= self.refusals:
            raise OSError(self.message)
        return "connection"


class Clock:
    """A monotonic clock that sleep advances."""

    def __init__(self) -> None:
        self.now_s, self.waits = 0.0, list[float]()

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now_s += seconds


def retry(server: Server, connections: Connections, clock: Clock) -> str:
    return with_retries(
        server.connect, connections, sleep=clock.sleep, clock=lambda: clock.now_s, jitter=lambda: 0.5
    )


def test_a_full_server_is_asked_again_with_doubling_waits_up_to_the_cap() -> None:
    clock, server = Clock(), Server(refusals=6)
    assert retry(server, Connections(first_backoff_s=0.1, max_backoff_s=1.0), clock) == "connection"
    assert server.tries == 7
    assert clock.waits == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0])


def test_retries_stop_when_the_budget_is_spent_and_the_refusal_is_raised() -> None:
    clock, server = Clock(), Server(refusals=1000)
    with pytest.raises(OSError, match="too many clients"):
        retry(server, Connections(retry_s=5.0, first_backoff_s=0.5, max_backoff_s=1.0), clock)
    assert clock.now_s <= 5.0 and server.tries == len(clock.waits) + 1 > 3


def test_other_failures_are_not_retried() -> None:
    clock, server = Clock(), Server(refusals=1, message="password authentication failed for user")
    with pytest.raises(OSError, match="password"):
        retry(server, Connections(), clock)
    assert (server.tries, clock.waits) == (1, [])


@pytest.mark.parametrize(
    "message",
    [
        "FATAL:  remaining connection slots are reserved for non-replication superuser connections",
        'FATAL:  too many connections for role "agent"',
        "FATAL:  the database system is starting up",
        "ERROR: no more connections allowed (max_client_conn)",
    ],
)
def test_the_servers_refusals_are_recognised(message: str) -> None:
    assert is_refusal(OSError(message))


def test_a_held_pool_is_bounded_and_an_agents_holds_nothing(monkeypatch) -> None:
    monkeypatch.delenv("WATTLOG_DB_POOL", raising=False)
    url = make_url("postgresql+psycopg://agent@127.0.0.1:1/ledger")
    held = _network_engine(url, "test", 5.0, Connections(pool_size=1, max_overflow=2))
    assert isinstance(held.pool, QueuePool)
    assert (held.pool.size(), held.pool._max_overflow) == (1, 2)
    default = _network_engine(url, "test", 5.0, None)  # SQLAlchemy's own default was 5 + 10
    assert (default.pool.size(), default.pool._max_overflow) == (2, 3)  # type: ignore[attr-defined]
    per_transaction = _network_engine(url, "test", 5.0, Connections(hold=False))
    assert isinstance(per_transaction.pool, NullPool)


def test_pgbouncer_mode_prepares_nothing_and_holds_nothing() -> None:
    connections = Connections(pgbouncer=True)
    assert connections.hold is False
    assert connections.driver_args("psycopg") == {"prepare_threshold": None}
    assert Connections().driver_args("psycopg") == {}


def test_the_environment_picks_the_mode_and_a_typo_is_an_error() -> None:
    assert Connections.from_env({}).hold is True
    assert Connections.from_env({}, hold=False).hold is False
    assert Connections.from_env({"WATTLOG_DB_POOL": "per-transaction"}).hold is False
    assert Connections.from_env({"WATTLOG_DB_POOL": "pgbouncer"}).pgbouncer is True
    with pytest.raises(ConfigError, match="WATTLOG_DB_POOL"):
        Connections.from_env({"WATTLOG_DB_POOL": "pgbounce"})


def test_nonsense_limits_are_refused() -> None:
    with pytest.raises(ConfigError):
        Connections(pool_size=0)
    with pytest.raises(ConfigError):
        Connections(first_backoff_s=3.0, max_backoff_s=1.0)
