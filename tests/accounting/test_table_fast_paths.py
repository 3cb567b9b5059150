"""What keeps `wattlog table` on a month of a fleet's rows fast (issue 27).

- checking a run's energy rows reads a partial index of impossible rows (empty in a sound
  ledger), not every row of the run (1.4 s for a 1,024-GPU month on SQLite before);
- a run's device spans (first start, last end: the validity gate's "every device for the whole
  run") are kept in the device totals, not read from the rows (every row: 0.43 s for a
  1,024-GPU month on SQLite; the first and last hours: a million rows once the last day is raw);
- `wattlog table` mounts only its own module's commands, not every package's.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

from sqlalchemy import event

from tests.accounting.sqlite_work import sqlite_steps
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.verify import check_ledger
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


def _fill(ledger: Ledger, name: str, hours: int, last_rows: int = 1) -> int:
    """A run of 8 devices x `hours` hours: one 10 s row each per hour, `last_rows` in the last hour
    (a raw hour holds 360); returns its id."""
    run = ledger.start_run(name)
    rows = [
        EnergyInterval.of("n", f"g{d}", Kind.GPU, Source.COUNTER, start, start + 10, 7e3, 6.9e3, 7.1e3)
        for h in range(hours)
        for k in range(last_rows if h == hours - 1 else 1)
        if (start := 3600.0 * h + 10.0 * k) is not None
        for d in range(8)
    ]
    ledger.record_intervals(run.id, rows)
    assert run.id is not None
    return run.id


def _spans_work(ledger: Ledger, hours: int, last_rows: int = 1) -> int:
    """The work of reading the run's span and its device spans (see `_fill`, `sqlite_steps`)."""
    run_id = _fill(ledger, f"r{hours}-{last_rows}", hours, last_rows)
    with ledger.reading(run_id) as read:
        work = sqlite_steps(ledger.engine, lambda: (read.device_spans(), read.span()))
        spans, span = read.device_spans(), read.span()
    assert spans[("n", "g0")] == span == (0.0, 3600.0 * (hours - 1) + 10.0 * last_rows)
    return work


def test_the_last_end_before_a_restart_is_a_seek_whatever_the_hours_hold(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    works = []
    for last_rows in (1, 360):
        run_id = _fill(ledger, f"r{last_rows}", 3, last_rows)
        restart_s = 2 * 3600.0 + 10.0 * last_rows - 5.0  # inside the last row
        with ledger.reading(run_id) as read:
            works.append(sqlite_steps(ledger.engine, functools.partial(read.last_end_before, restart_s)))
            assert read.last_end_before(restart_s) == {1: 3610.0, 360: 10_790.0}[last_rows]
    # 360 times the rows in the restart's hour: the same work (before: each row of the three hours read)
    assert works[1] < 2 * works[0] + 2, works
    ledger.engine.dispose()


def test_a_runs_device_spans_read_its_first_and_last_hours_not_every_row(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    short, long = _spans_work(ledger, 4), _spans_work(ledger, 400)
    # 100 times the rows: the same work give or take the indexes' depth (before: 100 times the work)
    assert long < 3 * short, (short, long)
    ledger.engine.dispose()


def test_a_runs_spans_cost_the_same_whatever_its_last_hours_hold(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    few, raw = _spans_work(ledger, 4, 1), _spans_work(ledger, 4, 360)
    # read from the device totals: 360 times the rows in the last hour, the same work (before 0017:
    # the last hours' rows were read, a million for a 1,024-GPU run raw at 10 s)
    assert raw < 2 * few, (few, raw)
    ledger.engine.dispose()


def test_a_gaps_device_power_and_the_gpu_hours_cost_the_same_whatever_the_rows(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    works = []
    for last_rows in (1, 360):
        run_id = _fill(ledger, f"p{last_rows}", 4, last_rows)
        with ledger.reading(run_id) as read:
            power, seconds = (
                functools.partial(read.device_power, ["g0"]),
                functools.partial(read.device_seconds, "gpu"),
            )
            reads = (power, seconds)
            works.append(sum(sqlite_steps(ledger.engine, call) for call in reads))
            assert read.device_power(["g0"]) == {"g0": (7e3 * (3 + last_rows), 10.0 * (3 + last_rows))}
    # from the device totals (before 0017: every row of the device, on every host, and of the kind)
    assert works[1] < 2 * works[0] + 2, works
    ledger.engine.dispose()


def test_the_table_imports_its_own_commands_module_and_no_others() -> None:
    """`wattlog table` on a month of a fleet's rows: mounting every package's commands first cost
    it most of a second of imports (issue 27); the root group imports the table's module alone."""
    others = ("runs_cli", "node_cli", "slurm_cli", "intensity_cli", "audit_cli")
    code = (
        "import sys\nfrom wattlog.cli import main\ncode = main(['table', '--help'])\n"
        f"print(code, sorted(m.rsplit('.', 1)[-1] for m in sys.modules if m.endswith({others})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines()[-1] == "0 []"
