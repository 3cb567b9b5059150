"""A real PostgreSQL that refuses connections (a role's CONNECTION LIMIT): retried, then an error."""

from __future__ import annotations

import threading

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.integration.test_postgres_ledger import postgres_server  # noqa: F401  (session fixture)
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.connections import Connections
from wattlog.errors import LedgerError

pytestmark = pytest.mark.integration


@pytest.fixture
def limited(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(superuser URL, URL of a role allowed one connection) of a fresh migrated ledger."""
    admin_url = request.getfixturevalue("postgres_server").create_database()
    make_engine(admin_url).dispose()
    role = f"agent_{make_url(admin_url).database}"
    with psycopg.connect(libpq(admin_url), autocommit=True) as connection:
        connection.execute(f'CREATE ROLE "{role}" LOGIN CONNECTION LIMIT 1')
        connection.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"')
        connection.execute(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "{role}"')
    return admin_url, str(make_url(admin_url).set(username=role))


def libpq(url: str) -> str:
    parsed = make_url(url)
    return f"host={parsed.host} port={parsed.port} user={parsed.username} dbname={parsed.database}"


def test_a_refused_agent_waits_for_a_free_slot_and_writes(limited: tuple[str, str]) -> None:
    _, agent_url = limited
    squatter = psycopg.connect(libpq(agent_url))  # the role's one slot, freed a moment later
    threading.Timer(0.5, squatter.close).start()
    engine = make_engine(agent_url, connections=Connections(hold=False, retry_s=20.0))
    ledger = Ledger(engine)
    ledger.start_run("fleet")
    assert ledger.get_run("fleet").name == "fleet"
    engine.dispose()


def test_a_server_that_stays_full_is_one_clear_error_after_the_budget(limited: tuple[str, str]) -> None:
    _, agent_url = limited
    with psycopg.connect(libpq(agent_url)), pytest.raises(LedgerError, match="too many connections"):
        make_engine(agent_url, connections=Connections(retry_s=0.5, first_backoff_s=0.1))


def test_an_agent_holds_no_connection_between_transactions(limited: tuple[str, str]) -> None:
    admin_url, agent_url = limited
    ledger = Ledger(make_engine(agent_url, connections=Connections(hold=False)))
    ledger.start_run("fleet")
    with psycopg.connect(libpq(admin_url)) as admin:
        [(count,)] = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (make_url(agent_url).username,)
        ).fetchall()
    assert count == 0
    # so the role's single slot is enough for a second process writing the same run
    other = Ledger(make_engine(agent_url, connections=Connections(hold=False)))
    other.start_run("fleet", resume=True)
    ledger.engine.dispose()
    other.engine.dispose()


def test_more_node_agents_than_connection_slots_all_join_and_write(
    limited: tuple[str, str], tmp_path
) -> None:
    from sqlalchemy.pool import NullPool

    from wattlog.accounting.fleet.node import NodeAgent, NodeOptions
    from wattlog.accounting.ledger.jobs import job_nodes
    from wattlog.telemetry.agent import AgentConfig
    from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus

    _, agent_url = limited  # one slot for the role; before, the second agent held none and exited
    nodes = []
    for index in range(4):
        # each node its own spool, as each node of a job has: four agents in one process shared one
        # spool file under the root's home, and the flock made a node's outage rows unwritable
        environ = {"SLURM_JOB_ID": "7", "SLURM_NNODES": "4", "SLURM_NODEID": str(index)}
        environ["WATTLOG_SPOOL_DIR"] = str(tmp_path / f"spool{index}")
        config = AgentConfig(
            port=None, period_s=0.01, flush_s=0.05, host=f"n{index}", lock_dir=tmp_path / f"l{index}"
        )
        node = NodeAgent(
            NodeOptions(run="job", db=agent_url, agent=config), environ, [SimulatedSensor(simulated_gpus(1))]
        )
        nodes.append(node.start())
    try:
        assert all(isinstance(node.ledger.engine.pool, NullPool) for node in nodes if node.ledger)
    finally:
        for node in nodes:
            node.close()
    ledger = Ledger(make_engine(agent_url, connections=Connections(hold=False)))
    assert len(job_nodes(ledger, "job").joined) == 4
    hosts = {total.host for total in ledger.energy_totals("job")}
    assert len(hosts) == 4
    ledger.engine.dispose()
