"""What keeps `wattlog table` on a month of a fleet's rows fast (issue 27).

- checking a run's energy rows reads a partial index of impossible rows (empty in a sound
  ledger), not every row of the run (1.4 s for a 1,024-GPU month on SQLite before);
- a run's device spans (first start, last end: the validity gate's "every device for the whole
  run") read the run's first and last hours and an index of rows longer than an hour, not every
  row (0.21 s of 0.43 s for a 1,024-GPU month on SQLite: the longest row was found by a scan);
- `wattlog table` mounts only its own module's commands, not every package's.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import event
from typer.testing import CliRunner

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.verify import check_ledger
from wattlog.cli import command_app, full_app
from wattlog.records import EnergyInterval, Kind, Source


def test_checking_a_runs_rows_reads_the_index_of_impossible_rows(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("r", RunSpec(site="jupiter"))
    rows = [
        EnergyInterval.of("n", f"g{i}", Kind.GPU, Source.COUNTER, 0.0, 10.0, 7e3, 6.9e3, 7.1e3)
        for i in range(3)
    ]
    ledger.record_intervals(run.id, rows)
    statements: list[tuple[str, object]] = []

    @event.listens_for(ledger.engine, "before_cursor_execute")
    def _seen(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        if "count(*)" in statement and "FROM energy_record" in statement:
            statements.append((statement, parameters))

    check_ledger(ledger, "test", [run.id])
    [(statement, parameters)] = statements
    with ledger.engine.connect() as connection:
        plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()  # type: ignore[arg-type]
    assert "ix_energy_impossible" in " ".join(str(step[-1]) for step in plan)
    ledger.engine.dispose()


def _spans_work(ledger: Ledger, hours: int) -> int:
    """SQLite virtual-machine steps (in hundreds) that reading the device spans of a run of 8
    devices x `hours` hours (one 10 s row each per hour) takes: the database's work, not the clock."""
    run = ledger.start_run(f"r{hours}")
    rows = [
        EnergyInterval.of(
            "n", f"g{d}", Kind.GPU, Source.COUNTER, 3600.0 * h, 3600.0 * h + 10, 7e3, 6.9e3, 7.1e3
        )
        for h in range(hours)
        for d in range(8)
    ]
    ledger.record_intervals(run.id, rows)
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0  # 0: go on

    def _counted(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        raw = conn.connection.dbapi_connection
        assert isinstance(raw, sqlite3.Connection)
        raw.set_progress_handler(count, 100)

    event.listen(ledger.engine, "before_cursor_execute", _counted)
    with ledger.reading(run.id) as read:
        spans = read.device_spans()
    event.remove(ledger.engine, "before_cursor_execute", _counted)
    assert spans[("n", "g0")] == (0.0, 3600.0 * (hours - 1) + 10)
    return steps[0]


def test_a_runs_device_spans_read_its_first_and_last_hours_not_every_row(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    short, long = _spans_work(ledger, 4), _spans_work(ledger, 400)
    # 100 times the rows: the same work give or take the indexes' depth (before: 100 times the work)
    assert long < 3 * short, (short, long)
    ledger.engine.dispose()


def test_the_table_app_has_the_full_apps_table_help() -> None:
    lean = command_app("table")
    assert lean is not None and command_app("runs") is None
    runner = CliRunner()
    for command in ("table", "compact"):
        assert (
            runner.invoke(lean, [command, "--help"]).output
            == runner.invoke(full_app(), [command, "--help"]).output
        )
