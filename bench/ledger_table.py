"""`wattlog table RUN` over a month of a fleet's compacted rows: end to end, and the parts issue 27 named.

Builds one run of `--gpus` GPUs x `--days` days of hourly (compacted) rows, the
shape `wattlog compact` leaves, beside a second run of the same size, then
times in one process:

- `wattlog table RUN` end to end (in-process `main`, so imports are paid once), without and with a
  restart event in the run;
- the same as a new process, what a user waits for (`python -m wattlog table RUN`, the median of
  `--rounds` runs, imports and bytecode cache included), beside the floor no table can go under
  (a new interpreter importing SQLModel and the ledger's models) and the same table with the
  interpreter's untrimmed teardown (`sys.exit(main())`, before wattlog.cli.run froze the
  collector at exit), the three taking turns in each round;
- with an hourly intensity series (`--intensity` over the month: the table sums hour by hour, from
  the hourly rollup);
- with `--raw-days N`, N days of the month kept raw (rows every `--raw-step-s`, 10 s on real
  agents: 62 M rows for 1,024 GPUs x 7 days, past this machine, so a longer step stands in; it
  flatters any read of the rows 60-fold: `--gpus 64 --raw-step-s 10` keeps the real step, 3.9 M
  raw rows, and is how the hours' read of the rows, 0.36 s there and ~6 s at 1,024 GPUs, was found);
- the baselines kept here: what the table did before issue 27's changes, timed on the same ledger:
  every energy row of the run read as objects (what `run_gaps` did when a run had a restart) and the
  integrity check over the whole ledger (what `wattlog table` ran each time), against the check of
  the shown run only.

    .venv/bin/python -m bench.ledger_table [--gpus 1024] [--days 30] [--raw-days 7] [--raw-step-s 600]
        [--backends sqlite,postgresql] [--no-baselines] [--rounds 7]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from bench.agent_rows import load, make_days
from bench.cli_start import process_seconds
from bench.ingest import T0
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.models import Resolution, hour_of
from wattlog.accounting.ledger.reader import ENERGY
from wattlog.accounting.ledger.verify import check_ledger
from wattlog.cli import main

BATCH = 20_000


def fill(ledger: Ledger, name: str, gpus: int, days: int, raw: tuple[int, int] = (0, 600)) -> None:
    """One run of `gpus` GPUs x `days` days (15-85 % of 700 W, bench.agent_rows.load; a +-5 % band):
    hourly rows, the last `raw[0]` days as raw rows every `raw[1]` seconds, in their day partitions."""
    run_id = ledger.start_run(name, RunSpec(project="bench", role="final", site="jupiter")).id
    first = hour_of(T0)
    make_days(ledger, first, first + 24 * days)
    raw_from = first + 24 * (days - raw[0])
    batch: list[dict[str, Any]] = []
    for hour in range(first, first + 24 * days):
        step_s, resolution = (raw[1], Resolution.RAW) if hour >= raw_from else (3600, Resolution.HOURLY)
        for start_s in range(hour * 3600, (hour + 1) * 3600, step_s):
            for gpu in range(gpus):
                joules = 700.0 * step_s * load(f"node{gpu // 8}", gpu % 8, start_s // 10)
                batch.append(
                    {
                        "run_id": run_id,
                        "host": f"node{gpu // 8}",
                        "device": f"gpu{gpu % 8}",
                        "kind": "gpu",
                        "source": "counter",
                        "resolution": resolution.value,
                        "hour": hour,
                        "start_s": float(start_s),
                        "end_s": float(start_s + step_s),
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


def table(url: str, run: str, *extra: str) -> None:
    """`wattlog table RUN --db URL [extra...]`, its output swallowed; raises on a non-zero exit."""
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["table", run, "--db", url, *extra])
    if code != 0:
        raise RuntimeError(f"wattlog table {run} exited {code}")


FLOOR = [
    "-c",
    "import gc; gc.disable(); import sqlmodel, wattlog.accounting.ledger.models; gc.freeze(); gc.enable(); "
    "gc.collect(); gc.freeze()",
]
"""What every table pays in a new process: SQLAlchemy's ORM, SQLModel and the ledger's models,
imported with the collector paused and an exit as quick, as `wattlog.cli.run` does both."""
UNTRIMMED_EXIT = ["-c", "import sys; from wattlog.cli import main; sys.exit(main())"]
"""`wattlog` before its exit was trimmed (wattlog.cli.run): the interpreter's own teardown."""


def new_process_s(cases: list[list[str]], rounds: int) -> list[tuple[float, float]]:
    """Per case, the median wall and CPU (user + sys) seconds of `rounds` fresh `python ARGS`
    processes, the cases taking turns in each round (a drift in the machine's load hits all alike)."""
    # bytecode cached, as in an installed wattlog (a machine may set PYTHONDONTWRITEBYTECODE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # the first round writes the bytecode cache: not counted
    times = [[process_seconds(args, env) for args in cases] for _ in range(rounds + 1)][1:]
    return [
        (statistics.median(r[i][0] for r in times), statistics.median(r[i][1] for r in times))
        for i in range(len(cases))
    ]


def process_line(url: str, label: str, rounds: int, *extra: str) -> str:
    """One case as a new process, beside the import floor and the untrimmed exit, timed in the same rounds."""
    table = ["table", "month", "--db", url, *extra]
    cases = [["-m", "wattlog", *table], [*UNTRIMMED_EXIT, *table], FLOOR]
    (wall, cpu), (untrimmed, _), (floor_wall, floor_cpu) = new_process_s(cases, rounds)
    return (
        f"  new process {label:24s} {wall:5.3f} s wall, {cpu:5.3f} s CPU (median of {rounds}; "
        f"import floor {floor_wall:.3f} s wall, {floor_cpu:.3f} s CPU; untrimmed exit {untrimmed:.3f} s wall)"
    )


def hourly_series(path: Path, days: int) -> Path:
    """An hourly intensity CSV over the month (0.2-0.5 kg/kWh through each day)."""
    lines = ["timestamp,kg_co2_per_kwh"]
    for hour in range(24 * days + 1):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(T0 + 3600 * hour))
        lines.append(f"{stamp},{0.2 + 0.3 * (hour % 24) / 23:.3f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def bench(url: str, args: argparse.Namespace, folder: Path) -> list[str]:
    """The lines of one backend."""
    ledger = Ledger(make_engine(url))
    t = time.perf_counter()
    fill(ledger, "month", args.gpus, args.days, (args.raw_days, args.raw_step_s))
    fill(ledger, "other", args.gpus, args.days, (args.raw_days, args.raw_step_s))
    with ledger.engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("ANALYZE"))
        rows = connection.execute(text("SELECT count(*) FROM energy_record")).scalar_one() // 2
    kept = f", the last {args.raw_days} days raw every {args.raw_step_s} s" if args.raw_days else ""
    lines = [
        f"{rows:,} rows a run ({args.gpus} GPUs x {args.days} days{kept}), 2 runs, filled in "
        f"{time.perf_counter() - t:.0f} s"
    ]
    series = str(hourly_series(folder / "grid.csv", args.days))
    table(url, "month")  # warm: imports, caches
    lines.append(f"wattlog table month (no restart)       {seconds(lambda: table(url, 'month')):7.3f} s")
    lines.append(process_line(url, "(no restart)", args.rounds))
    hourly_s = seconds(lambda: table(url, "month", "--intensity", series))
    lines.append(f"wattlog table month --intensity hourly {hourly_s:7.3f} s")
    lines.append(process_line(url, "--intensity hourly", args.rounds, "--intensity", series))
    ledger.record_event("month", "restart", time_s=T0 + 86_400.0 * args.days / 2)
    lines.append(f"wattlog table month (with a restart)   {seconds(lambda: table(url, 'month')):7.3f} s")
    lines.append(process_line(url, "(with a restart)", args.rounds))
    if args.no_baselines:
        ledger.engine.dispose()
        return lines
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
    parser.add_argument("--raw-days", type=int, default=0, help="days at the month's end kept raw")
    parser.add_argument("--raw-step-s", type=int, default=600, help="seconds per raw row (divides 3600)")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--no-baselines", action="store_true", help="skip the before-issue-27 timings")
    parser.add_argument("--rounds", type=int, default=7, help="new processes timed per case")
    args = parser.parse_args()
    with ExitStack() as stack:
        for backend in args.backends.split(","):
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            if backend == "sqlite":
                url = f"sqlite:///{folder / 'month.db'}"
            else:
                from tests.integration.postgres import running_postgres

                url = stack.enter_context(running_postgres()).create_database("month")
            for line in bench(url, args, folder):
                print(f"{backend:10s} {line}", flush=True)


if __name__ == "__main__":
    main_()
