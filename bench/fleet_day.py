"""Compaction and `wattlog check` of one raw day partition on PostgreSQL: client memory and time.

Stands in for: one UTC day of a fleet's agents on a shared PostgreSQL ledger (issue 41), each node
writing 10 s rows of its 8 GPUs (700 W peak), CPU (350 W), DRAM (60 W) and node meter (2,000 W)
with power swinging between 15 % and 85 % of peak. The rows are generated in SQL on the server
(generate_series, the columns a flush writes) straight into the day's partition, and the rollups
are rebuilt from them, so what is timed is compaction and check alone, not the fill.

With ``--layout month`` the rows are instead a compacted 54-day run (one row per device-hour),
and only the check is timed: what it meets after a long run.

Each step (check, then compaction) runs in a child process whose peak RSS (ru_maxrss) is printed
beside its import-only RSS; the child imports wattlog from --code (default this checkout), so a
second checkout of an older commit measures the code before (the fill is the same: the schema
is). Totals before and after compaction are printed; they must agree to the joule.

    PYTHONPATH=. .venv/bin/python -m bench.fleet_day --rows 460800 1380000 --code . /tmp/fleet-base
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

DAY = 20_454  # 2026-01-01 (days since the epoch)
_KINDS = ", ".join(
    [f"('gpu{g}', 'gpu', 'counter', 700.0, {g})" for g in range(8)]
    + [
        "('cpu', 'cpu', 'sampled', 350.0, 8)",
        "('dram', 'dram', 'sampled', 60.0, 9)",
        "('node', 'node', 'sampled', 2000.0, 10)",
    ]
)
DEVICES_PER_NODE = 11
ROWS_PER_DEVICE_DAY = 8640  # 10 s rows
FILL = f"""
INSERT INTO energy_record (run_id, host, device, kind, source, resolution, hour, start_s, end_s,
    energy_j, low_j, high_j)
SELECT :run, 'node' || n, d.name, d.kind, d.source, 'raw', floor((:t0 + i * 10) / 3600.0)::int,
    :t0 + i * 10, :t0 + i * 10 + 10, p.e, p.e * 0.95, p.e * 1.05
FROM generate_series(0, :nodes - 1) n
CROSS JOIN (VALUES {_KINDS}) d(name, kind, source, peak_w, phase)
CROSS JOIN generate_series(0, {ROWS_PER_DEVICE_DAY - 1}) i
CROSS JOIN LATERAL (SELECT 10 * d.peak_w * (0.5 + 0.35 * sin(i / 37.0 + n + d.phase)) AS e) p
LIMIT :rows
"""


def fill_day(url: str, rows: int, day: int = DAY) -> int:
    """A run whose `rows` raw rows all lie in `day`'s partition, its rollups rebuilt; returns the run id."""
    from sqlalchemy import text

    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.accounting.ledger.partitions import partition_name

    engine = make_engine(url)
    ledger = Ledger(engine)
    run = ledger.start_run("fleet-day")
    nodes = -(-rows // (DEVICES_PER_NODE * ROWS_PER_DEVICE_DAY))
    with engine.begin() as connection:
        connection.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {partition_name(day)} PARTITION OF energy_record"
                f" FOR VALUES FROM ({day * 24}) TO ({day * 24 + 24})"
            )
        )
        connection.execute(text(FILL), {"run": run.id, "t0": day * 86_400.0, "nodes": nodes, "rows": rows})
    ledger.rebuild_totals(run.id)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM ANALYZE energy_record")
    engine.dispose()
    assert run.id is not None
    return run.id


SIZE = "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('energy_record')"
MONTH_DAYS = 54
MONTH = f"""
INSERT INTO energy_record (run_id, host, device, kind, source, resolution, hour, start_s, end_s,
    energy_j, low_j, high_j)
SELECT :run, 'node' || n, d.name, d.kind, d.source, 'hourly', :h0 + h, (:h0 + h) * 3600.0,
    (:h0 + h) * 3600.0 + 3600, p.e, p.e * 0.95, p.e * 1.05
FROM generate_series(0, :nodes - 1) n
CROSS JOIN (VALUES {_KINDS}) d(name, kind, source, peak_w, phase)
CROSS JOIN generate_series(0, {MONTH_DAYS * 24 - 1}) h
CROSS JOIN LATERAL (SELECT 3600 * d.peak_w * (0.5 + 0.35 * sin(h / 7.0 + n + d.phase)) AS e) p
LIMIT :rows
"""


def fill_month(url: str, rows: int, day: int = DAY) -> int:
    """A run of MONTH_DAYS days compacted (one row per device-hour, `rows` in all), rollups rebuilt.

    What `wattlog check` meets after a long run: its work grows with the hours x hosts it sums
    (a 54-day month of 128 nodes is 1.8 M hourly rows and 663,552 hourly sums), not with one day's rows.
    """
    from sqlalchemy import text

    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.accounting.ledger.partitions import partition_name

    engine = make_engine(url)
    ledger = Ledger(engine)
    run = ledger.start_run("fleet-month")
    nodes = -(-rows // (DEVICES_PER_NODE * MONTH_DAYS * 24))
    with engine.begin() as connection:
        for d in range(day, day + MONTH_DAYS):
            connection.execute(
                text(
                    f"CREATE TABLE IF NOT EXISTS {partition_name(d)} PARTITION OF energy_record"
                    f" FOR VALUES FROM ({d * 24}) TO ({d * 24 + 24})"
                )
            )
        connection.execute(text(MONTH), {"run": run.id, "h0": day * 24, "nodes": nodes, "rows": rows})
    ledger.rebuild_totals(run.id)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM ANALYZE")
    engine.dispose()
    assert run.id is not None
    return run.id


def step(what: str, url: str) -> dict[str, float]:
    """Run one step in this process: `check` (rows, rollups), `compact` or `table` (the run's Table 19
    row, as `wattlog table` prints it); its time, peak RSS and the energy table's bytes before and after."""
    import contextlib
    import io

    from sqlalchemy import text

    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.accounting.ledger.verify import check_ledger, rollup_drift
    from wattlog.cli import main as wattlog

    engine = make_engine(url, migrate=False)
    ledger = Ledger(engine)
    with engine.connect() as connection:  # imports and the first connection, before the step
        joules0 = float(connection.execute(text("SELECT sum(energy_j) FROM energy_record")).scalar_one())
        bytes0 = int(connection.execute(text(SIZE)).scalar_one())
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    began = time.perf_counter()
    if what == "check":
        check_ledger(ledger, "bench")
        drift = rollup_drift(ledger)
        assert not drift, drift
        done = {}
    elif what == "table":
        with engine.connect() as connection:
            name = str(connection.execute(text("SELECT name FROM run ORDER BY id LIMIT 1")).scalar_one())
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            code = wattlog(["table", name, "--site", "jupiter", "--db", url])
        assert code == 0 and "MWh" in shown.getvalue(), shown.getvalue()
        done = {}
    else:
        compaction = ledger.compact_hourly(0, now_s=(DAY + 2) * 86_400.0)
        done = {"raw_rows": compaction.raw_rows, "hourly_rows": compaction.hourly_rows}
    seconds = time.perf_counter() - began
    with engine.connect() as connection:
        joules1 = float(connection.execute(text("SELECT sum(energy_j) FROM energy_record")).scalar_one())
        bytes1 = int(connection.execute(text(SIZE)).scalar_one())
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    engine.dispose()
    return {
        "seconds": seconds,
        "rss0_mib": rss0 / 1024,
        "peak_mib": rss1 / 1024,
        "j0": joules0,
        "j1": joules1,
        "bytes0": bytes0,
        "bytes1": bytes1,
        **done,
    }


def _child(code: Path, what: str, url: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run(
        [sys.executable, __file__, "--step", what, "--url", url], env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    """Start a PostgreSQL, then for each size and code: fill a database, time check then compaction."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[460_800])
    parser.add_argument("--code", type=Path, nargs="+", default=[Path(".")])
    parser.add_argument(
        "--layout", choices=["day", "month"], default="day", help="raw day, or compacted month"
    )
    parser.add_argument("--step", choices=["check", "compact", "table"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        print(json.dumps(step(args.step, args.url)))
        return
    from tests.integration.postgres import running_postgres

    print(__doc__.splitlines()[2].strip(), "(see the module's docstring)")
    with running_postgres() as server:
        for rows in args.rows:
            for code in args.code:
                url = server.create_database()
                (fill_day if args.layout == "day" else fill_month)(url, rows)
                for what in ("check", "compact") if args.layout == "day" else ("check", "table"):
                    got = _child(code.resolve(), what, url)
                    joules = (
                        "equal" if got["j0"] == got["j1"] else f"differ by {got['j1'] - got['j0']:+.6f} J"
                    )
                    print(
                        f"rows {rows:>9,}  code {str(code):16s} {what:7s} {got['seconds']:7.1f} s"
                        f"  client peak RSS {got['peak_mib']:7.0f} MiB (after imports {got['rss0_mib']:4.0f})"
                        f"  joules {got['j0']:.6e} -> {got['j1']:.6e} ({joules})"
                        f"  energy table {got['bytes0'] / 2**20:.0f} -> {got['bytes1'] / 2**20:.0f} MiB",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
