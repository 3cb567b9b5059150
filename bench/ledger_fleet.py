"""A fleet's hour in the ledger: one node's flush latency by rows already in the hour, before and after.

A node flushes 10 rows (8 GPUs, CPU, DRAM) every 10 s; 1,000 nodes put 3.6 M
rows in an hour. Each flush checks which of its rows the ledger already holds
(so a retry never counts twice). Before migration 0008 that check read every
host's raw rows of the run in the hour; now it reads the flushing host's only.
This bench fills one run's hour to each level with the fleet's rows (bulk
inserts, the same row shapes as bench.ingest), then times, at that level and
in the same process, the old check (the baseline, kept here) and the new one,
and a whole flush (check + insert + rollup) through `Ledger.record_intervals`.

    .venv/bin/python -m bench.ledger_fleet [--levels 0,57600,460800] [--flushes 30]
        [--backends sqlite,postgresql]

PostgreSQL is started on 127.0.0.1 the way the tests do (tests/integration/postgres.py).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, text
from sqlalchemy.orm import Session

from bench.agent_rows import make_days
from bench.ingest import FLUSH_S, T0, flush_rows
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.models import Resolution, hour_of
from wattlog.accounting.ledger.reader import ENERGY
from wattlog.accounting.ledger.writes import energy_row, held_keys

ROWS_PER_FLUSH = 10
BATCH = 20_000


def old_held_keys(session: Session, run_id: int, intervals: Any) -> set[tuple[Any, ...]]:
    """The check before 0008: every host's raw keys of the run in the flush's hours (the baseline)."""
    e = ENERGY.c
    hours = {hour_of(row.start_s) for row in intervals}
    query = select(e.host, e.device, e.source, e.start_s).where(
        (e.run_id == run_id) & (e.resolution == Resolution.RAW.value) & e.hour.between(min(hours), max(hours))
    )
    return {tuple(key) for key in session.execute(query)}


def fill(ledger: Ledger, run_id: int, rows: int, filled: int) -> int:
    """Add fleet rows to the run's first hour until it holds `rows` (hosts fleet0.., 10 rows a flush)."""
    per_host = int(3600 / FLUSH_S) * ROWS_PER_FLUSH  # a host's rows in a full hour
    make_days(ledger, hour_of(T0), hour_of(T0) + 1)  # the rows go to their day's partition, not DEFAULT
    batch: list[dict[str, Any]] = []
    for index in range(filled // ROWS_PER_FLUSH, rows // ROWS_PER_FLUSH):
        host, flush = divmod(index * ROWS_PER_FLUSH, per_host)
        batch.extend(energy_row(run_id, row) for row in flush_rows(f"fleet{host}", flush // ROWS_PER_FLUSH))
        if len(batch) >= BATCH:
            _insert(ledger, batch)
            batch = []
    if batch:
        _insert(ledger, batch)
    with ledger.engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("ANALYZE energy_record"))
    return rows


def _insert(ledger: Ledger, batch: list[dict[str, Any]]) -> None:
    with ledger.engine.begin() as connection:
        connection.execute(insert(ENERGY), batch)


def timed(call: Callable[[], object], times: int) -> tuple[float, float, float, float]:
    """(p50 ms, p99 ms, seconds in all) of `times` calls, and the peak MiB one more call allocates."""
    latencies = []
    for _ in range(times):
        t = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - t)
    tracemalloc.start()  # apart from the timed calls: tracing slows allocation
    call()
    peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    total_s = sum(latencies)
    latencies.sort()
    return 1000 * statistics.median(latencies), 1000 * latencies[int(0.99 * (times - 1))], total_s, peak_mib


def bench(url: str, levels: list[int], flushes: int) -> list[str]:
    """One line per level: the old and new check, and a whole flush, on the ledger at `url`."""
    ledger = Ledger(make_engine(url))
    run_id = ledger.start_run("fleet", RunSpec(project="bench")).id
    assert run_id is not None
    lines, filled, writes = [], 0, 0
    probe = flush_rows("probe", 0)
    for level in levels:
        filled = fill(ledger, run_id, level, filled)
        with Session(ledger.engine) as session:
            old = timed(lambda: old_held_keys(session, run_id, probe), flushes)
            new = timed(lambda: held_keys(session, run_id, probe), flushes)

        def write() -> None:
            nonlocal writes
            ledger.record_intervals(run_id, flush_rows("probe", writes))
            writes += 1

        whole = timed(write, flushes)
        lines.append(
            f"{level:>9,} rows in the hour | check before p50 {old[0]:8.2f} ms p99 {old[1]:8.2f} ms "
            f"{old[3]:6.1f} MiB | after p50 {new[0]:6.2f} ms p99 {new[1]:6.2f} ms {new[3]:5.2f} MiB | "
            f"whole flush p50 {whole[0]:6.2f} ms p99 {whole[1]:6.2f} ms, "
            f"{flushes * ROWS_PER_FLUSH / whole[2]:,.0f} rows/s (one writer)"
        )
    ledger.engine.dispose()
    return lines


def main() -> None:
    """Run the bench on each backend and print its lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="0,57600,460800", help="rows in the hour, ascending")
    parser.add_argument("--flushes", type=int, default=30, help="timed calls per level")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    levels = sorted(int(level) for level in args.levels.split(","))
    with ExitStack() as stack:
        for backend in args.backends.split(","):
            if backend == "sqlite":
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                url = f"sqlite:///{folder / 'fleet.db'}"
            else:
                from tests.integration.postgres import running_postgres

                url = stack.enter_context(running_postgres()).create_database("fleet")
            t = time.perf_counter()
            for line in bench(url, levels, args.flushes):
                print(f"{backend:10s} {line}", flush=True)
            print(f"{backend:10s} ({time.perf_counter() - t:.0f} s with the fill; T0 {T0:.0f})", flush=True)


if __name__ == "__main__":
    main()
