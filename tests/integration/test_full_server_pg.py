"""A real PostgreSQL that is full during `wattlog run`: the run closes within 10 s of its command.

On 38e5f82 each write waited 30 s for a free slot (a 10 s command's run exited 203 s after
the command ended). The role here has one connection slot, taken by another client once the
run's first rows are stored; the run spools and ends, exit 75, within 10 s of its command.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.test_ledger_connections_pg import libpq, limited  # noqa: F401  (fixture)
from tests.integration.test_postgres_ledger import postgres_server  # noqa: F401  (session fixture)
from tests.waiting import wait_until
from wattlog.telemetry.sinks import INCOMPLETE_EXIT

pytestmark = pytest.mark.integration


def _rows(admin_url: str) -> int:
    with psycopg.connect(libpq(admin_url)) as admin:
        return int(admin.execute("SELECT count(*) FROM energy_record").fetchall()[0][0])


def _squat(agent_url: str) -> psycopg.Connection:
    """Take the role's one slot (the run holds it for milliseconds at a time)."""
    taken: list[psycopg.Connection] = []

    def take() -> bool:
        try:
            taken.append(psycopg.connect(libpq(agent_url)))
        except psycopg.OperationalError:
            return False
        return True

    wait_until(take, 10.0, "the run never let go of its connection slot")
    return taken[0]


def test_a_full_server_mid_run_is_an_outage_and_the_run_closes_within_10_s(
    limited: tuple[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    admin_url, agent_url = limited
    done = tmp_path / "done"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "WATTLOG_SPOOL_DIR": str(tmp_path / "s")}
    env["WATTLOG_DB_POOL"] = "per-transaction"
    args = ["run", "--run", "full", "--db", agent_url, "--flush-s", "0.2", "--lock-dir", str(tmp_path)]
    run = subprocess.Popen(
        [sys.executable, "-m", "wattlog", *args, "--", "sh", "-c", f"sleep 4; touch {done}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        wait_until(lambda: _rows(admin_url) > 0, 60.0, "no row of the run was stored")
        squatter = _squat(agent_url)  # the server is full for the run from now on
        try:
            out, err = run.communicate(timeout=120)
            ended_s = time.time()
        finally:
            squatter.close()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert done.exists(), err
    assert ended_s - done.stat().st_mtime <= 10.0, err  # 38e5f82: 30 s per write
    assert run.returncode == INCOMPLETE_EXIT, out + err
    assert len([line for line in err.splitlines() if "refused" in line or "unavailable" in line]) <= 1, err
