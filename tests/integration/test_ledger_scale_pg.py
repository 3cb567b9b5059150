"""tests/accounting/test_ledger_scale.py and test_energy_hours.py rerun on a real PostgreSQL 15 (the
migrations in place, the reads)."""

from __future__ import annotations

import pytest

from tests.accounting.test_energy_hours import (  # noqa: F401  (rerun with the fixture below)
    test_a_ledger_from_before_the_rollups_of_hours_and_spans_gets_them_from_its_rows,
    test_a_runs_hours_are_read_from_the_rollup_and_add_up_to_its_rows,
    test_compaction_and_a_rebuild_leave_the_hours_as_they_were,
    test_deleting_a_run_deletes_its_hours_and_an_impossible_hour_is_refused,
)
from tests.accounting.test_ledger_scale import (  # noqa: F401  (rerun with the fixture below)
    test_a_flush_reads_only_its_own_hosts_keys_of_the_hour,
    test_a_ledger_from_before_the_index_upgrades_in_place_keeping_every_row,
    test_dedup_still_holds_per_host_after_the_narrower_read,
    test_downtime_before_a_restart_is_found_after_a_short_or_a_long_silence,
)
from tests.integration.test_postgres_ledger import postgres_server  # noqa: F401  (session fixture)

pytestmark = pytest.mark.integration


@pytest.fixture
def ledger_url(request: pytest.FixtureRequest) -> str:
    """A fresh PostgreSQL database per test."""
    return str(request.getfixturevalue("postgres_server").create_database())
