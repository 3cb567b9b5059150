"""Ledger ingest: energy records per second into SQLite and PostgreSQL, batched as the agent writes them.

One node's agent flushes every 10 s: 8 GPUs + CPU + DRAM = 10 rows in one
transaction (LedgerSink.write). This bench writes such flushes back to back
and prints rows/s, flushes/s and per-flush latency; with `--nodes N` it
writes N nodes' flushes from N threads at once (a shared ledger), and says how
the achieved flush rate compares with what N nodes need (N / 10 s flushes per second):
`--nodes 1000 --flushes 5` is 1,000 simulated node writers, each through its own LedgerSink.

    .venv/bin/python -m bench.ingest [--flushes 2000] [--nodes 1] [--backends sqlite,postgresql]

PostgreSQL is started on 127.0.0.1 the way the tests do (tests/integration/postgres.py).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from wattlog.accounting.ledger import Ledger, LedgerSink, RunSpec, make_engine
from wattlog.errors import LedgerError
from wattlog.records import EnergyInterval, Kind, Source

FLUSH_S = 10.0
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def flush_rows(host: str, index: int) -> list[EnergyInterval]:
    """One flush of one node: 8 GPUs (counter), CPU and DRAM (estimated)."""
    start = T0 + index * FLUSH_S
    rows = [
        EnergyInterval.of(
            host,
            f"GPU-{host}-{g}",
            Kind.GPU,
            Source.COUNTER,
            start,
            start + FLUSH_S,
            7000.0 + g,
            6650.0 + g,
            7350.0 + g,
        )
        for g in range(8)
    ]
    rows.append(
        EnergyInterval.of(
            host, "cpu", Kind.CPU, Source.ESTIMATED, start, start + FLUSH_S, 3000.0, 2000.0, 4000.0
        )
    )
    rows.append(
        EnergyInterval.of(
            host, "dram", Kind.DRAM, Source.ESTIMATED, start, start + FLUSH_S, 400.0, 200.0, 600.0
        )
    )
    return rows


def bench(url: str, flushes: int, nodes: int) -> dict[str, Any]:
    """Write `flushes` flushes per node from `nodes` threads; return the figures."""
    engine = make_engine(url)
    ledger = Ledger(engine)
    run = ledger.start_run(f"ingest-{time.time_ns()}", RunSpec(project="bench"))
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def node(host: str) -> None:
        sink = LedgerSink(ledger, run.id)
        batches = [flush_rows(host, i) for i in range(flushes)]
        mine, failed = [], []
        for rows in batches:
            t = time.perf_counter()
            try:
                sink.write(rows, [])
            except LedgerError as error:  # counted, never hidden: an agent would spool these rows
                failed.append(str(error).split(":", 1)[-1].strip()[:80])
                continue
            mine.append(time.perf_counter() - t)
        with lock:
            latencies.extend(mine)
            failures.extend(failed)

    threads = [threading.Thread(target=node, args=(f"node{n}",)) for n in range(nodes)]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - t0
    rows = sum(t.rows for t in ledger.energy_totals(run.id))
    assert rows == (flushes * nodes - len(failures)) * 10, rows  # every flush landed whole or not at all
    engine.dispose()
    latencies.sort()
    return {
        "rows": rows,
        "seconds": elapsed,
        "rows_per_s": rows / elapsed,
        "flushes_per_s": (flushes * nodes - len(failures)) / elapsed,
        "failed": len(failures),
        "first_failure": failures[0] if failures else "",
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
    }


def main() -> None:
    """Run the bench on each backend and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flushes", type=int, default=2000, help="flushes per node")
    parser.add_argument("--nodes", type=int, default=1, help="nodes writing at once (threads)")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    with ExitStack() as stack:
        for backend in args.backends.split(","):
            if backend == "sqlite":
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                url = f"sqlite:///{folder / 'ingest.db'}"
            else:
                from tests.integration.postgres import running_postgres

                url = stack.enter_context(running_postgres()).create_database("ingest")
            r = bench(url, args.flushes, args.nodes)
            print(
                f"{backend:10s} nodes={args.nodes} flushes={args.flushes * args.nodes} rows={r['rows']:.0f} "
                f"in {r['seconds']:.2f} s: {r['rows_per_s']:,.0f} rows/s, "
                f"{r['flushes_per_s']:,.0f} flushes/s, "
                f"flush latency p50 {r['p50_ms']:.2f} ms p99 {r['p99_ms']:.2f} ms "
                f"(one node flushes 10 rows per {FLUSH_S:g} s)"
            )
            if r["failed"]:
                print(
                    f"{'':10s} {r['failed']:.0f} flushes refused (an agent spools them): {r['first_failure']}"
                )
            needed = args.nodes / FLUSH_S  # every node flushes once per FLUSH_S
            print(
                f"{'':10s} {args.nodes} nodes need {needed:,.1f} flushes/s: "
                f"headroom x{r['flushes_per_s'] / needed:,.1f} at this machine's CPU"
            )


if __name__ == "__main__":
    main()
