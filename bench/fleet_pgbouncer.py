"""A fleet's flushes through a real pgbouncer (transaction mode) into PostgreSQL: every node present.

Stands in for: `--nodes` agents (`wattlog node`, one per node) of one job started by one `srun`,
each flushing 11 rows (8 GPUs, CPU, DRAM, node meter; bench.agent_rows: varying power) every 10 s
through `WATTLOG_DB_POOL=pgbouncer` (no connection held between flushes, no server-side prepared
statements). Agents started together flush together: with `--arrivals srun` (the default) every
node's flush of a round is due at the same instant, each node late by its own start skew (up to
`--skew-ms`); `--arrivals even` spreads them over the round (the old, flattering shape). Here
`--procs` processes of `--threads` threads share the hosts (procs x threads clients at once, as a
burst of agents queues at pgbouncer). A flush's latency is counted from when it was due (what an
agent waits), so a queue shows. Before the rounds the run's hour is filled with `--fill` rows of other
hosts through the ledger's own write path (so into the day's partition, rollups kept).
Printed: latency p50/p99 by round, the flush rate sustained against the rate needed and how many
rounds ended within their 10 s, PostgreSQL's and pgbouncer's CPU, worker memory, the hosts present
in the run's totals, and `wattlog table` on the run.

    .venv/bin/python -m bench.fleet_pgbouncer [--nodes 1000] [--procs 8] [--threads 8] [--rounds 6]
        [--fill 460800] [--pool 20] [--arrivals srun|even] [--skew-ms 50]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing as mp
import os
import resource
import statistics
import threading
import time
import zlib
from pathlib import Path
from typing import Any

from bench.agent_rows import FLUSH_S, ROWS_PER_FLUSH, agent_flush
from tests.integration.pgbouncer import running_pgbouncer
from tests.integration.postgres import running_postgres
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.connections import Connections
from wattlog.cli import main as wattlog
from wattlog.errors import LedgerError
from wattlog.records import EnergyInterval

FIRST_FLUSH = 200  # the fleet's flushes start past the fill's (its hosts are others anyway)
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
FILL_BATCH = 2_000  # rows per fill transaction


def flush_rows(host: str, index: int) -> list[EnergyInterval]:
    """One node's flush (bench.agent_rows) in the bench's hour."""
    return agent_flush(host, index, T0)


def fill(ledger: Ledger, run_id: int, rows: int) -> None:
    """Put `rows` rows of other hosts (fleet0..) in the run's first hour, through Ledger.record_intervals."""
    per_host = int(3600 / FLUSH_S)
    batch: list[EnergyInterval] = []
    for index in range(rows // ROWS_PER_FLUSH):
        host, flush = divmod(index, per_host)
        batch += flush_rows(f"fleet{host}", flush)
        if len(batch) >= FILL_BATCH:
            ledger.record_intervals(run_id, batch)
            batch = []
    if batch:
        ledger.record_intervals(run_id, batch)


def due_s(args: argparse.Namespace, host: str, index: int, start_at: float, round_: int) -> float:
    """When a host's flush of a round is due: together with its job's (srun), or spread (even)."""
    if args.arrivals == "even":
        return start_at + round_ * FLUSH_S + index * FLUSH_S / args.nodes
    skew_s = zlib.crc32(host.encode()) % 1000 / 1000 * args.skew_ms / 1000  # its agent's start skew
    return start_at + round_ * FLUSH_S + skew_s


def server_cpu_s(roots: set[int]) -> float:
    """CPU seconds (user + system) of the processes under `roots` (this bench's postmaster and itself)
    named postgres or pgbouncer: other sessions' servers on the machine are not counted."""
    parent, cpu, name = {}, {}, {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        with contextlib.suppress(OSError, ValueError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            name[pid] = stat[stat.index("(") + 1 : stat.rindex(")")]
            parent[pid], cpu[pid] = int(fields[1]), int(fields[11]) + int(fields[12])

    def under(pid: int) -> bool:
        while pid > 1:
            if pid in roots:
                return True
            pid = parent.get(pid, 0)
        return False

    ticks = sum(cpu[p] for p in cpu if name[p].startswith(("postgres", "pgbouncer")) and under(p))
    return ticks / os.sysconf("SC_CLK_TCK")


def worker(
    args: argparse.Namespace, url: str, hosts: list[tuple[int, str]], start_at: float, out: Any
) -> None:
    """Flush each host once per round from `args.threads` threads; put (latencies and service times by
    round, MiB by round, flushes started late, failed, still lost, when the last flush ended)."""
    ledger = Ledger(make_engine(url, connections=Connections(pgbouncer=True)))
    rounds = args.rounds
    waited: list[list[float]] = [[] for _ in range(rounds)]
    served: list[list[float]] = [[] for _ in range(rounds)]
    memory: list[float] = []
    late, spooled, ended = [0], [], [0.0]

    def thread(mine: list[tuple[int, str]], round_: int) -> None:
        for due, host in sorted((due_s(args, h, i, start_at, round_), h) for i, h in mine):
            wait = due - time.time()
            if wait > 0:
                time.sleep(wait)
            else:
                late[0] += 1
            t = time.perf_counter()
            try:
                ledger.record_intervals("fleet", flush_rows(host, FIRST_FLUSH + round_))
            except LedgerError:  # an agent spools the flush and replays it: here, after the rounds
                spooled.append((host, round_))
                continue
            served[round_].append(time.perf_counter() - t)
            waited[round_].append(time.time() - due)
            ended[0] = max(ended[0], time.time())

    for round_ in range(rounds):
        threads = [
            threading.Thread(target=thread, args=(hosts[k :: args.threads], round_))
            for k in range(args.threads)
        ]
        for each in threads:
            each.start()
        for each in threads:
            each.join()
        memory.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    failed = len(spooled)
    for _ in range(5):
        spooled = [flush for flush in spooled if not _stored(ledger, *flush)]
    ledger.engine.dispose()
    out.put((waited, served, memory, late[0], failed, len(spooled), ended[0]))


def _stored(ledger: Ledger, host: str, round_: int) -> bool:
    try:
        ledger.record_intervals("fleet", flush_rows(host, FIRST_FLUSH + round_))
    except LedgerError:
        return False
    return True


def bench(args: argparse.Namespace) -> list[str]:
    """The fleet's lines."""
    with running_postgres() as server, running_pgbouncer(server, pool_size=args.pool) as bouncer:
        direct = server.create_database("fleet")
        ledger = Ledger(make_engine(direct))
        run_id = ledger.start_run("fleet", RunSpec(project="bench", role="final", site="jupiter")).id
        assert run_id is not None
        fill(ledger, run_id, args.fill)
        url = bouncer.url(direct.rsplit("/", 1)[1])
        hosts = [f"node{n:04d}" for n in range(args.nodes)]
        indexed = list(enumerate(hosts))
        out: Any = mp.get_context("fork").Queue()
        start_at = time.time() + 3.0
        procs = [
            mp.get_context("fork").Process(
                target=worker, args=(args, url, indexed[p :: args.procs], start_at, out)
            )
            for p in range(args.procs)
        ]
        postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        roots = {postmaster, os.getpid()}
        cpu0, wall0 = server_cpu_s(roots), time.time()
        for proc in procs:
            proc.start()
        results = [out.get(timeout=FLUSH_S * args.rounds + 900) for _ in procs]
        for proc in procs:
            proc.join()
        ended = max(result[6] for result in results)
        wall, cpu = ended - max(start_at, wall0), server_cpu_s(roots) - cpu0
        lines = _lines(args, results, wall, cpu)
        totals = ledger.energy_totals("fleet")
        present = {t.host for t in totals} & set(hosts)
        expected = sum(
            row.energy_j for h in hosts for r in range(args.rounds) for row in flush_rows(h, FIRST_FLUSH + r)
        )
        fleet_j = sum(t.energy_j for t in totals if t.host in present)
        lines.append(
            f"hosts in the run's totals: {len(present)} of {args.nodes}; their energy {fleet_j:,.0f} J "
            f"of {expected:,.0f} J sent ({100 * (fleet_j / expected - 1):+.4f} %)"
        )
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = wattlog(["table", "fleet", "--db", url])
        lines.append(f"wattlog table fleet through pgbouncer: exit {code}, {time.perf_counter() - t:.2f} s")
        ledger.engine.dispose()
    return lines


def _lines(args: argparse.Namespace, results: list[Any], wall_s: float, cpu_s: float) -> list[str]:
    lines = [
        f"stands in for: {args.nodes} agents of one job ({args.arrivals} arrivals, start skew up to "
        f"{args.skew_ms:g} ms) through pgbouncer (transaction mode, {args.pool} server connections), "
        f"{args.procs} x {args.threads} clients, {args.rounds} rounds of 10 s"
    ]
    for round_ in range(args.rounds):  # "flush alone": ms from its start, the rest from when it was due
        ms = sorted(1000 * s for result in results for s in result[0][round_]) or [float("nan")]
        alone = sorted(1000 * s for result in results for s in result[1][round_]) or [float("nan")]
        in_hour = args.fill + round_ * args.nodes * ROWS_PER_FLUSH
        p50, p99 = statistics.median(ms), ms[int(0.99 * (len(ms) - 1))]
        lines.append(
            f"  round {round_ + 1}: {in_hour:>9,} rows in the hour | from due: p50 {p50:7.1f} ms"
            f" p99 {p99:7.1f} ms, last {ms[-1] / 1000:.2f} s | flush alone p50 {statistics.median(alone):.1f}"
        )
    flushes = args.nodes * args.rounds
    late = sum(result[3] for result in results)
    rounds_in_time = sum(
        max((s for result in results for s in result[0][r]), default=0.0) < FLUSH_S
        for r in range(args.rounds)
    )
    drains = [
        max((s for result in results for s in result[0][r]), default=float("nan")) for r in range(args.rounds)
    ]
    lines.append(
        f"  each round's burst drained in {statistics.median(drains):.2f} s (median): "
        f"{args.nodes / statistics.median(drains):.1f} flushes/s while the burst lasted, the rate sustained"
    )
    lines.append(
        f"  {flushes:,} flushes ({ROWS_PER_FLUSH * flushes:,} rows) in {wall_s:.1f} s: {flushes / wall_s:.1f}"
        f" flushes/s against {args.nodes / FLUSH_S:.1f} needed; {rounds_in_time} of {args.rounds} rounds"
        f" done within their 10 s; {late:,} flushes started after they were due"
    )
    failed, lost = sum(result[4] for result in results), sum(result[5] for result in results)
    lines.append(
        f"  {failed:,} flushes refused or timed out, replayed after the rounds; {lost:,} still not stored"
    )
    lines.append(f"  PostgreSQL + pgbouncer CPU: {cpu_s:.1f} s = {cpu_s / wall_s:.2f} cores")
    first = [result[2][0] for result in results]
    last = [result[2][-1] for result in results]
    lines.append(
        f"  worker memory (max RSS, MiB) after round 1: {min(first):.0f}-{max(first):.0f}, after round "
        f"{args.rounds}: {min(last):.0f}-{max(last):.0f}"
    )
    return lines


def main() -> None:
    """Run the fleet and print its lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--threads", type=int, default=8, help="clients per process")
    parser.add_argument("--arrivals", choices=["srun", "even"], default="srun")
    parser.add_argument("--skew-ms", type=float, default=50.0, help="agents' start skew (srun arrivals)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--fill", type=int, default=460_800, help="rows already in the hour (other hosts)")
    parser.add_argument("--pool", type=int, default=20, help="pgbouncer's server connections")
    for line in bench(parser.parse_args()):
        print(line, flush=True)


if __name__ == "__main__":
    main()
