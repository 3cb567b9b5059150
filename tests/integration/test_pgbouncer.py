"""Node agents' flushes through a real pgbouncer in transaction mode, in front of a real PostgreSQL.

Twelve agents (threads, each with its own engine, as separate nodes have)
flush six times each through a pgbouncer that keeps two server connections:
every row lands once, every host is in the run's totals, and the server never
sees more than pgbouncer's pool. psycopg's server-side prepared statements are
off (`prepare_threshold=None`): in transaction mode consecutive transactions
may run on server connections that never saw the statement prepared.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psycopg
import pytest

from tests.integration.pgbouncer import available, running_pgbouncer
from tests.integration.postgres import PostgresServer
from tests.integration.test_postgres_ledger import postgres_server  # noqa: F401  (session fixture)
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.connections import Connections
from wattlog.records import EnergyInterval, Kind, Source

pytestmark = pytest.mark.integration

AGENTS, FLUSHES, GPUS, POOL = 12, 6, 4, 2
T0 = 1_767_225_600.0


@pytest.fixture
def bouncer(postgres_server: PostgresServer) -> Iterator[tuple[PostgresServer, PostgresServer]]:  # noqa: F811
    """(the server, pgbouncer before it with POOL server connections)."""
    if not available():
        pytest.skip("pgbouncer not installed (scripts/setup.sh --servers installs it)")
    with running_pgbouncer(postgres_server, pool_size=POOL) as bouncer:
        yield postgres_server, bouncer


def flush(host: int, index: int) -> list[EnergyInterval]:
    start = T0 + 10.0 * index
    return [
        EnergyInterval.of(
            f"node{host:02d}", f"GPU-{g}", Kind.GPU, Source.COUNTER, start, start + 10, 7e3, 6.6e3, 7.4e3
        )
        for g in range(GPUS)
    ]


def test_agents_flush_through_pgbouncer_in_transaction_mode(
    bouncer: tuple[PostgresServer, PostgresServer],
) -> None:
    server, pooler = bouncer
    direct_url = server.create_database("bouncer")
    database = direct_url.rsplit("/", 1)[1]
    # migrated through pgbouncer too: the migration lock is transaction-scoped
    Ledger(make_engine(pooler.url(database), connections=Connections(pgbouncer=True))).start_run("job")
    errors: list[BaseException] = []
    busiest = [0]

    def agent(host: int) -> None:
        engine = make_engine(pooler.url(database), connections=Connections(pgbouncer=True))
        assert engine.dialect.name == "postgresql"
        ledger = Ledger(engine)
        try:
            for index in range(FLUSHES):
                ledger.record_intervals("job", flush(host, index))
                ledger.record_intervals("job", flush(host, index))  # a retried flush: stored once
        except BaseException as error:  # noqa: BLE001  (reported by the test thread)
            errors.append(error)
        finally:
            engine.dispose()

    def watch(stop: threading.Event) -> None:
        with psycopg.connect(f"host={server.host} port={server.port} user=postgres dbname=postgres") as admin:
            while not stop.wait(0.02):
                [(count,)] = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
                ).fetchall()
                busiest[0] = max(busiest[0], count)

    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(stop,))
    watcher.start()
    threads = [threading.Thread(target=agent, args=(host,)) for host in range(AGENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    watcher.join()
    assert errors == []
    reader = Ledger(make_engine(direct_url))
    totals = reader.energy_totals("job")
    assert {total.host for total in totals} == {f"node{h:02d}" for h in range(AGENTS)}
    assert sum(total.energy_j for total in totals) == pytest.approx(AGENTS * FLUSHES * GPUS * 7e3)
    assert 1 <= busiest[0] <= POOL
    reader.engine.dispose()


def test_the_pgbouncer_mode_turns_off_psycopgs_prepared_statements() -> None:
    assert Connections(pgbouncer=True).driver_args("psycopg") == {"prepare_threshold": None}
    assert Connections(pgbouncer=True).hold is False
