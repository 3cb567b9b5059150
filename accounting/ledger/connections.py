"""How a process connects to a network ledger: few connections, retried with backoff when refused.

A PostgreSQL server takes ``max_connections`` clients (100 by default); an agent
that held one connection for its whole run made node 98 of a job fail to start.
Here a process holds at most ``pool_size + max_overflow`` connections; an agent
holds none between flushes (``hold=False``: one connection per transaction, a
few milliseconds every 10 s, so as many at once as threads writing: one); and a
connection the server refuses because it is full or starting up is retried with
exponential backoff (and jitter, so 1,000 nodes refused at once do not come back
at once) for up to ``retry_s``.

Behind pgbouncer in transaction mode (``pgbouncer=True``) the driver's
server-side prepared statements are switched off: consecutive transactions may
run on different server connections, which do not know each other's statements.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from wattlog.causes import LEDGER_OUTAGE
from wattlog.errors import ConfigError

__all__ = ["POOL_ENV_VAR", "Connections", "is_refusal", "with_retries"]

logger = logging.getLogger(__name__)

POOL_ENV_VAR = "WATTLOG_DB_POOL"
"""``held`` (the default), ``per-transaction`` or ``pgbouncer``: how this process connects."""

# libpq reports a connection the server refused without a SQLSTATE (psycopg's
# OperationalError.sqlstate is None), so the server's own FATAL texts are the
# only sign; these are PostgreSQL's (postmaster, InitPostgres) and pgbouncer's.
_REFUSALS = (
    "sorry, too many clients already",  # 53300, max_connections
    "remaining connection slots are reserved",  # 53300, superuser/reserved slots
    "too many connections for role",  # 53300, ALTER ROLE ... CONNECTION LIMIT
    "too many connections for database",  # 53300, ALTER DATABASE ... CONNECTION LIMIT
    "the database system is starting up",  # 57P03
    "no more connections allowed",  # pgbouncer max_client_conn
)

T = TypeVar("T")


@dataclass
class Connections:
    """How many connections a process holds to a network ledger, and how refusals are retried."""

    pool_size: int = 2
    """Connections kept open between transactions (with ``hold``)."""
    max_overflow: int = 3
    """Extra connections opened while more threads than ``pool_size`` write at once."""
    hold: bool = True
    """Keep connections open between transactions; False opens one per transaction (agents, pgbouncer)."""
    pgbouncer: bool = False
    """The URL is pgbouncer in transaction mode: no server-side prepared statements, nothing held."""
    retry_s: float = 30.0
    """How long the process's first connection is retried when refused (server full or starting)."""
    running_retry_s: float = 2.0
    """How long a refusal is retried once a connection succeeded (the run is measuring): a full
    server is then an outage like a down one, its rows spooled, not a 30 s wait per write."""
    first_backoff_s: float = 0.1
    """The first wait after a refusal; each next one doubles, up to ``max_backoff_s``."""
    max_backoff_s: float = 2.0
    """The longest wait between two tries."""
    _connected: bool = field(default=False, init=False, repr=False, compare=False)
    _refusing: bool = field(default=False, init=False, repr=False, compare=False)

    def budget_s(self) -> float:
        """How long the next refused connection is retried: retry_s for the first one, running_retry_s
        once one succeeded, 0 (one try) while the server has kept refusing past that budget."""
        if self._refusing:
            return 0.0
        return min(self.running_retry_s, self.retry_s) if self._connected else self.retry_s

    def settled(self, ok: bool) -> None:
        """Note how a connect ended: a success closes the outage, a spent running budget opens one."""
        if ok:
            self._connected, self._refusing = True, False
        elif self._connected:
            self._refusing = True

    def __post_init__(self) -> None:
        if self.pool_size < 1 or self.max_overflow < 0:
            raise ConfigError(
                f"a ledger pool needs pool_size >= 1 and max_overflow >= 0, got {self.pool_size} "
                f"and {self.max_overflow}"
            )
        if self.retry_s < 0 or self.running_retry_s < 0 or not 0 < self.first_backoff_s <= self.max_backoff_s:
            raise ConfigError(
                f"ledger connect retries need retry_s >= 0 and 0 < first_backoff_s <= max_backoff_s, got "
                f"{self.retry_s}, {self.first_backoff_s}, {self.max_backoff_s}"
            )
        if self.pgbouncer:
            self.hold = False  # pgbouncer pools; a second pool in front of it only holds its slots

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *, hold: bool = True) -> Connections:
        """The connections $WATTLOG_DB_POOL asks for; unset gives `hold` (agents pass False).

        Raises:
            ConfigError: An unknown value.
        """
        value = environ.get(POOL_ENV_VAR, "").strip().lower()
        if not value:
            return cls(hold=hold)
        modes = {"held": cls(hold=True), "per-transaction": cls(hold=False), "pgbouncer": cls(pgbouncer=True)}
        if value not in modes:
            raise ConfigError(f"${POOL_ENV_VAR}={value!r} is not one of {', '.join(modes)}")
        return modes[value]

    def driver_args(self, driver: str) -> dict[str, Any]:
        """Connect arguments for the driver: psycopg 3 prepares no statements behind pgbouncer."""
        if self.pgbouncer and driver == "psycopg":
            return {"prepare_threshold": None}
        return {}


def is_refusal(error: BaseException) -> bool:
    """Whether `error` is a server refusing a connection for now (full, starting up): worth retrying."""
    message = str(error)
    return any(refusal in message for refusal in _REFUSALS)


def with_retries(
    connect: Callable[[], T],
    connections: Connections,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    jitter: Callable[[], float] = random.random,
) -> T:
    """Call `connect` until the server stops refusing it, waiting longer each time (Connections.budget_s).

    Args:
        connect: Opens one connection (the driver's connect).
        connections: The retry budget and backoff.
        sleep: Waits, in seconds (injected for tests).
        clock: Monotonic seconds (injected for tests).
        jitter: A number in [0, 1): each wait is scaled by 0.5 + jitter so refused clients spread out.

    Returns:
        What `connect` returned.

    Raises:
        Exception: Whatever `connect` raised: at once when it is no refusal, else once the budget is spent.
    """
    budget_s = connections.budget_s()
    deadline = clock() + budget_s
    backoff_s = connections.first_backoff_s
    tries = 0
    while True:
        tries += 1
        try:
            connection = connect()
        except Exception as error:
            if not is_refusal(error):
                raise
            wait_s = min(backoff_s * (0.5 + jitter()), connections.max_backoff_s)
            if clock() + wait_s > deadline:
                connections.settled(False)
                if budget_s:
                    logger.warning(
                        "the ledger refused %d connections in %.1f s: giving up",
                        tries,
                        budget_s,
                        extra=LEDGER_OUTAGE,
                    )
                raise
            if tries == 1:
                logger.warning(
                    "the ledger refused a connection (%s): retrying for up to %.0f s",
                    error,
                    budget_s,
                    extra=LEDGER_OUTAGE,
                )
            sleep(wait_s)
            backoff_s = min(backoff_s * 2, connections.max_backoff_s)
        else:
            connections.settled(True)
            return connection
