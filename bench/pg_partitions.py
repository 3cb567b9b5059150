"""Compaction of 30 raw days on PostgreSQL: one plain table (DELETE + VACUUM) against day partitions.

A smaller fleet than issue 27's (default 8 GPUs at 10 s rows, 30 days: 2.07 M raw rows) so it
fits a small machine; the rows are generated in SQL straight into the energy table (the same
columns a flush writes). Each layout gets its own database on a PostgreSQL 15 this bench starts:
``plain`` stays at revision 0013, ``partitioned`` is filled at 0013 and migrated to 0014 (timed).
Printed per layout: compaction seconds (plus VACUUM for the plain table, which a DELETE needs to
make its space reusable), the energy table's pg_total_relation_size before and after, and the
total joules before and after (must be equal).

    PYTHONPATH=. .venv/bin/python -m bench.pg_partitions [--gpus 8] [--days 30]
"""

from __future__ import annotations

import argparse
import time

from sqlalchemy import Engine, create_engine, text

from tests.integration.postgres import running_postgres
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.compaction import return_space
from wattlog.accounting.ledger.engine import upgrade

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
FLUSH_S = 10
_SIZE = "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relname LIKE 'energy_record%%'"
_FILL = """
INSERT INTO energy_record (run_id, host, device, kind, source, resolution, hour, start_s, end_s,
    energy_j, low_j, high_j)
SELECT :run, 'node' || (g / 8), 'gpu' || (g % 8), 'gpu', 'counter', 'raw',
    floor((:t0 + i * 10) / 3600.0)::int, :t0 + i * 10, :t0 + i * 10 + 10,
    3000.0 + (i % 7), 2900.0 + (i % 7), 3100.0 + (i % 7)
FROM generate_series(0, :gpus - 1) g, generate_series(0, :steps - 1) i
"""


def _fill(engine: Engine, gpus: int, days: int) -> None:
    ledger = Ledger(engine)
    run = ledger.start_run("bench")
    with engine.begin() as connection:
        connection.execute(
            text(_FILL), {"run": run.id, "t0": T0, "gpus": gpus, "steps": days * 86_400 // FLUSH_S}
        )


def _figures(engine: Engine) -> tuple[int, float]:
    with engine.connect() as connection:
        size = int(connection.execute(text(_SIZE)).scalar_one())
        joules = float(connection.execute(text("SELECT sum(energy_j) FROM energy_record")).scalar_one())
    return size, joules


def _layout(url: str, partitioned: bool, gpus: int, days: int) -> None:
    raw = create_engine(url)
    with raw.begin() as connection:
        upgrade(connection, "0013")
    engine = make_engine(url, migrate=False)
    _fill(engine, gpus, days)
    migrate_s = 0.0
    if partitioned:
        began = time.perf_counter()
        with raw.begin() as connection:
            upgrade(connection, "0014")
        migrate_s = time.perf_counter() - began
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM ANALYZE energy_record")
    size0, joules0 = _figures(engine)
    began = time.perf_counter()
    done = Ledger(engine).compact_hourly(0, now_s=T0 + days * 86_400 + 3600)
    compact_s = time.perf_counter() - began
    began = time.perf_counter()
    if not partitioned:
        return_space(engine)
    vacuum_s = time.perf_counter() - began
    size1, joules1 = _figures(engine)
    name = "partitioned (0014)" if partitioned else "plain (0013)"
    print(
        f"{name:19s} rows {done.raw_rows:>10,} -> {done.hourly_rows:>7,}  migrate {migrate_s:6.1f} s"
        f"  compact {compact_s:6.1f} s  vacuum {vacuum_s:5.1f} s"
        f"  size {size0 / 2**20:8.1f} -> {size1 / 2**20:6.1f} MiB  joules {joules0:.6e} -> {joules1:.6e}"
        f" ({'equal' if joules0 == joules1 else f'differ by {joules1 - joules0:+.3f}'})"
    )
    engine.dispose()
    raw.dispose()


def main() -> None:
    """Run both layouts on one fresh PostgreSQL and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    print(f"{args.gpus} GPUs x {args.days} days at {FLUSH_S} s rows, PostgreSQL 15")
    with running_postgres() as server:
        for partitioned in (False, True):
            _layout(server.create_database(), partitioned, args.gpus, args.days)


if __name__ == "__main__":
    main()
