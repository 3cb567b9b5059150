"""A PostgreSQL ledger dropped and created again under its name during a run is another ledger.

The writer pins the server's system identifier and the database's oid; a database recreated
under the same name (a restore, a reset) answers with another oid, so the writer's next
transaction is refused (LedgerReplaced, an outage: its rows spool) instead of writing into
a ledger that does not know the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.integration.postgres import PostgresServer, available, running_postgres
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.identity import IdentityGuard, LedgerReplaced
from wattlog.records import EnergyInterval, Kind, Source

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[PostgresServer]:
    if not available():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL 15 binaries missing in CI: apt-get install -y postgresql")
        pytest.skip("PostgreSQL 15 binaries not installed (/usr/lib/postgresql/15/bin)")
    with running_postgres() as server:
        yield server


def _row(start_s: float) -> EnergyInterval:
    return EnergyInterval.of("n", "GPU-0", Kind.GPU, Source.SIMULATED, start_s, start_s + 1, 5.0, 5.0, 5.0)


def test_a_database_recreated_under_its_name_refuses_the_writer(postgres_server: PostgresServer) -> None:
    import psycopg

    url = postgres_server.create_database()
    name = url.rsplit("/", 1)[1]
    engine = make_engine(url)
    ledger = Ledger(engine)
    ledger.start_run("r")
    now_s = [0.0]
    guard = IdentityGuard(engine, clock=lambda: now_s[0]).pin()
    assert guard.pinned is not None and guard.pinned.key[0]  # the system identifier was readable
    ledger.record_intervals("r", [_row(0.0)])
    engine.dispose()  # the pool's connections would keep the old database from being dropped
    admin = f"host={postgres_server.host} port={postgres_server.port} user=postgres dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    Ledger(make_engine(url)).start_run("r")  # another ledger, the same URL, even a run of that name
    now_s[0] = 10.0  # the next flush, 10 s later: the check is due
    with pytest.raises(LedgerReplaced, match="deleted or replaced during the run"):
        ledger.record_intervals("r", [_row(1.0)])
    guard.release()
    engine.dispose()
