"""Ledger scale: a ledger shaped like a 30-day run of 1,024 GPUs, then `wattlog table` on it.

1,024 GPUs on 128 nodes (8 GPUs + CPU + DRAM each), flushed every 10 s, is
1,280 rows per 10 s: ~332M raw rows in 30 days, too many for this machine. So:

- raw: a slice of `--raw-hours` of raw 10 s rows for the whole fleet is
  generated, its bytes measured (after VACUUM) and extrapolated per GPU-day;
  the slice is then compacted with Ledger.compact_hourly (timed, totals checked);
- compacted: the full 30 days of hourly rows (1,024 x 24 x 30 GPU rows + the
  nodes' CPU and DRAM rows) are generated with bulk inserts, measured, and
  `wattlog table RUN --db ...` is timed on it (a fresh process, imports included).

    .venv/bin/python -m bench.scale [--gpus 1024] [--days 30] [--raw-hours 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import insert, text

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.models import EnergyRecord, Resolution, hour_of

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
FLUSH_S = 10
GPUS_PER_NODE = 8
CHUNK = 50_000


def devices(gpus: int) -> Iterator[tuple[str, str, str, str, float]]:
    """(host, device, kind, source, watts) of the fleet: GPUs by counter, CPU and DRAM estimated."""
    for node in range((gpus + GPUS_PER_NODE - 1) // GPUS_PER_NODE):
        host = f"node{node:04d}"
        for g in range(min(GPUS_PER_NODE, gpus - node * GPUS_PER_NODE)):
            yield host, f"GPU-{node:04d}-{g}", "gpu", "counter", 650.0 + (node * 8 + g) % 50
        yield host, "cpu", "cpu", "estimated", 300.0
        yield host, "dram", "dram", "estimated", 40.0


def rows(run_id: int, gpus: int, hours: int, step_s: int, resolution: Resolution) -> Iterator[dict]:  # type: ignore[type-arg]
    """Energy rows of the fleet over `hours`, one per device per `step_s` (band +-5 % GPU, +-33 % else)."""
    fleet = list(devices(gpus))
    for t in range(0, hours * 3600, step_s):
        start = T0 + t
        for host, device, kind, source, watts in fleet:
            energy = watts * step_s
            band = 0.05 if source == "counter" else 0.33
            yield {
                "run_id": run_id,
                "host": host,
                "device": device,
                "kind": kind,
                "source": source,
                "resolution": resolution.value,
                "hour": hour_of(start),
                "start_s": start,
                "end_s": start + step_s,
                "energy_j": energy,
                "low_j": energy * (1 - band),
                "high_j": energy * (1 + band),
            }


def fill(
    url: str, name: str, gpus: int, hours: int, step_s: int, resolution: Resolution
) -> tuple[int, float]:
    """Create a run, bulk-insert its rows and build its totals; returns (rows, seconds)."""
    engine = make_engine(url)
    run = Ledger(engine).start_run(
        name, RunSpec(project="scale", model=f"synthetic {gpus}-GPU run", site="jupiter")
    )
    t = time.perf_counter()
    count = 0
    with engine.begin() as connection:
        batch: list[dict] = []  # type: ignore[type-arg]
        for row in rows(run.id, gpus, hours, step_s, resolution):
            batch.append(row)
            if len(batch) == CHUNK:
                connection.execute(insert(EnergyRecord), batch)
                count += len(batch)
                batch = []
        if batch:
            connection.execute(insert(EnergyRecord), batch)
            count += len(batch)
    Ledger(engine).rebuild_totals(run.id)  # the bulk load bypassed Ledger.record_intervals
    engine.dispose()
    return count, time.perf_counter() - t


def size_bytes(path: Path) -> int:
    """The SQLite file's size after VACUUM (no free pages, WAL checkpointed)."""
    engine = make_engine(f"sqlite:///{path}")
    with engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM"))
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return path.stat().st_size


def main() -> None:
    """Generate both ledgers, measure them, time the table, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=1024)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--raw-hours", type=int, default=1, help="hours of raw 10 s rows in the raw slice")
    parser.add_argument("--keep", type=Path, help="keep the ledgers in this folder")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="wattlog-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        empty = folder / "empty.db"
        make_engine(f"sqlite:///{empty}").dispose()
        schema_bytes = size_bytes(empty)

        raw = folder / "raw.db"
        n, s = fill(f"sqlite:///{raw}", "scale-raw", args.gpus, args.raw_hours, FLUSH_S, Resolution.RAW)
        raw_bytes = size_bytes(raw) - schema_bytes
        gpu_days = args.gpus * args.raw_hours / 24
        print(
            f"raw slice: {n:,} rows ({args.gpus} GPUs x {args.raw_hours} h of {FLUSH_S} s flushes) "
            f"inserted in {s:.1f} s ({n / s:,.0f} rows/s); {raw_bytes / 1e6:.1f} MB = "
            f"{raw_bytes / gpu_days / 1e6:.2f} MB per GPU-day raw, {raw_bytes / n:.0f} B/row; "
            f"{args.days} days would be {raw_bytes / gpu_days * args.gpus * args.days / 1e9:.1f} GB raw"
        )
        ledger = Ledger(make_engine(f"sqlite:///{raw}"))
        before = sum(h.energy_j for h in ledger.energy_by_hour("scale-raw"))  # sums the records themselves
        t = time.perf_counter()
        done = ledger.compact_hourly(0, now_s=T0 + (args.raw_hours + 1) * 3600)
        seconds = time.perf_counter() - t
        after = sum(h.energy_j for h in ledger.energy_by_hour("scale-raw"))
        ledger.engine.dispose()
        print(
            f"compacting the slice: {done.raw_rows:,} raw rows -> {done.hourly_rows:,} hourly rows in "
            f"{seconds:.1f} s; total {before:.6e} J before, {after:.6e} J after "
            f"(relative difference {abs(after - before) / before:.1e}); "
            f"{(size_bytes(raw) - schema_bytes) / gpu_days / 1e3:.1f} kB per GPU-day after"
        )

        compacted = folder / "compacted.db"
        url = f"sqlite:///{compacted}"
        n, s = fill(url, "scale-final", args.gpus, args.days * 24, 3600, Resolution.HOURLY)
        hourly_bytes = size_bytes(compacted) - schema_bytes
        print(
            f"compacted ledger: {n:,} hourly rows ({args.gpus} GPUs + their nodes' CPU/DRAM x {args.days} d) "
            f"inserted in {s:.1f} s; {hourly_bytes / 1e6:.1f} MB = "
            f"{hourly_bytes / (args.gpus * args.days) / 1e3:.1f} kB per GPU-day compacted"
        )
        command = [
            sys.executable,
            "-c",
            "import sys; from wattlog.cli import main; sys.exit(main(sys.argv[1:]))",
            "table",
            "scale-final",
            "--db",
            url,
            "--format",
            "markdown",
        ]
        series = folder / "intensity.csv"
        series.write_text(
            "".join(f"{int(T0) + 3600 * h},{0.2 + 0.2 * (h % 24) / 23:.4f}\n" for h in range(args.days * 24))
        )
        for attempt, extra in (("1st", []), ("2nd", []), ("hourly intensity", ["--intensity", str(series)])):
            t = time.perf_counter()
            result = subprocess.run([*command, *extra], capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - t
            print(
                f"`wattlog table scale-final --db {url} {' '.join(extra)}` ({attempt}): {seconds:.2f} s, "
                f"exit {result.returncode}"
            )
            if result.returncode:
                print(result.stderr[-2000:])
        print(result.stdout[-3000:])
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
