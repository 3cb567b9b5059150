"""The ledger's invariants (tests/accounting/test_ledger_invariants.py) on a real PostgreSQL 15.

The same state machine, each sequence on a fresh database of the session's server: PostgreSQL
compacts by partition swap and folds hours in the server (accounting.ledger.server_fold), where
SQLite folds them in Python, so the invariants are checked on both paths. A few sequences only:
each one creates and migrates a database.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.accounting.test_ledger_invariants import LedgerMachine
from tests.integration.postgres import PostgresServer
from tests.integration.test_postgres_ledger import postgres_server  # noqa: F401  (session fixture)

pytestmark = pytest.mark.integration


def test_the_ledger_invariants_hold_on_postgresql(postgres_server: PostgresServer) -> None:  # noqa: F811
    def on_a_fresh_database(_folder: Path) -> str:
        return postgres_server.create_database("invariants")

    run_state_machine_as_test(
        lambda: LedgerMachine(on_a_fresh_database),
        settings=settings(
            max_examples=int(os.environ.get("WATTLOG_INVARIANT_EXAMPLES", "3")),
            stateful_step_count=8,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
