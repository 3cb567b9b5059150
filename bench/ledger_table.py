"""`wattlog table RUN` over a month of a fleet's compacted rows: end to end, and the parts issue 27 named.

Builds one run of `--gpus` GPUs x `--days` days of hourly (compacted) rows, the
shape `wattlog compact` leaves, beside a second run of the same size, then
times in one process:

- `wattlog table RUN` end to end (in-process `main`, so imports are paid once), without and with a
  restart event in the run;
- the baselines kept here: what the table did before issue 27's changes, timed on the same ledger:
  every energy row of the run read as objects (what `run_gaps` did when a run had a restart) and the
  integrity check over the whole ledger (what `wattlog table` ran each time), against the check of
  the shown run only.

    .venv/bin/python -m bench.ledger_table [--gpus 1024] [--days 30] [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from bench.ingest import T0
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.models import Resolution, hour_of
from wattlog.accounting.ledger.reader import ENERGY
from wattlog.accounting.verify import check_ledger
from wattlog.cli import main

BATCH = 20_000


def fill(ledger: Ledger, name: str, gpus: int, days: int) -> None:
    """One run of `gpus` GPUs x `days` days of hourly rows (700 W for each GPU-hour, a +-5 % band)."""
    run_id = ledger.start_run(name, RunSpec(project="bench", role="final", site="jupiter")).id
    first = hour_of(T0)
    batch: list[dict[str, Any]] = []
    for hour in range(first, first + 24 * days):
        for gpu in range(gpus):
            joules = 700.0 * 3600
            batch.append(
                {
                    "run_id": run_id,
                    "host": f"node{gpu // 8}",
                    "device": f"gpu{gpu % 8}",
                    "kind": "gpu",
                    "source": "counter",
                    "resolution": Resolution.HOURLY.value,
                    "hour": hour,
                    "start_s": hour * 3600.0,
                    "end_s": (hour + 1) * 3600.0,
                    "energy_j": joules,
                    "low_j": joules * 0.95,
                    "high_j": joules * 1.05,
                }
            )
            if len(batch) >= BATCH:
                _insert(ledger, batch)
                batch = []
    if batch:
        _insert(ledger, batch)
    ledger.rebuild_totals(name)


def _insert(ledger: Ledger, batch: list[dict[str, Any]]) -> None:
    with ledger.engine.begin() as connection:
        connection.execute(insert(ENERGY), batch)


def seconds(call: Callable[[], object], times: int = 3) -> float:
    """The best of `times` calls, in seconds (the machine is shared: the best is the least disturbed)."""
    best = float("inf")
    for _ in range(times):
        t = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t)
    return best


def table(url: str, run: str) -> None:
    """`wattlog table RUN --db URL`, its output swallowed; raises on a non-zero exit."""
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["table", run, "--db", url])
    if code != 0:
        raise RuntimeError(f"wattlog table {run} exited {code}")


def bench(url: str, gpus: int, days: int) -> list[str]:
    """The lines of one backend."""
    ledger = Ledger(make_engine(url))
    t = time.perf_counter()
    fill(ledger, "month", gpus, days)
    fill(ledger, "other", gpus, days)
    with ledger.engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("ANALYZE"))
    rows = gpus * 24 * days
    lines = [f"{rows:,} hourly rows a run, 2 runs, filled in {time.perf_counter() - t:.0f} s"]
    table(url, "month")  # warm: imports, caches
    lines.append(f"wattlog table month (no restart)       {seconds(lambda: table(url, 'month')):7.3f} s")
    ledger.record_event("month", "restart", time_s=T0 + 86_400.0 * days / 2)
    lines.append(f"wattlog table month (with a restart)   {seconds(lambda: table(url, 'month')):7.3f} s")
    with ledger.reading("month") as read:
        objects_s = seconds(lambda: read.energy_rows(), times=1)
    lines.append(f"  baseline: the run's rows as objects  {objects_s:7.3f} s (what a restart added before)")
    whole_s = seconds(lambda: check_ledger(ledger, "bench"))
    with ledger.reading("month") as read:
        run_id = read.run_id
    scoped_s = seconds(lambda: check_ledger(ledger, "bench", [run_id]))
    lines.append(
        f"  check: whole ledger {whole_s:7.3f} s (before, every table) | the shown run {scoped_s:7.3f} s"
    )
    ledger.engine.dispose()
    return lines


def main_() -> None:
    """Run the bench on each backend and print its lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=1024)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    with ExitStack() as stack:
        for backend in args.backends.split(","):
            if backend == "sqlite":
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                url = f"sqlite:///{folder / 'month.db'}"
            else:
                from tests.integration.postgres import running_postgres

                url = stack.enter_context(running_postgres()).create_database("month")
            for line in bench(url, args.gpus, args.days):
                print(f"{backend:10s} {line}", flush=True)


if __name__ == "__main__":
    main_()
