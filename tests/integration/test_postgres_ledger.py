"""The ledger's tests, run on SQLite and on a real PostgreSQL 15 started on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.accounting.test_ledger_engine import schema_diff
from tests.accounting.test_ledger_store import *  # noqa: F403  (the same tests, rerun with the fixture below)
from tests.accounting.test_ledger_store import ledger  # noqa: F401  (fixture, shadowed names made explicit)
from tests.integration.postgres import PostgresServer, available, running_postgres
from wattlog.accounting.ledger import make_engine

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL for the session; each test gets its own database."""
    if not available():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL 15 binaries missing in CI: apt-get install -y postgresql")
        pytest.skip("PostgreSQL 15 binaries not installed (/usr/lib/postgresql/15/bin)")
    with running_postgres() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """A fresh ledger database per test, on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    return request.getfixturevalue("postgres_server").create_database()


def test_migrated_schema_matches_the_models_on_both(ledger_url: str) -> None:
    engine = make_engine(ledger_url)
    assert schema_diff(engine) == []
    engine.dispose()
