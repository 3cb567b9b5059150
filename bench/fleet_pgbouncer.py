"""1,000 nodes' flushes through a real pgbouncer (transaction mode) into PostgreSQL: every node present.

Real nodes are 1,000 agent processes, each flushing 10 rows (8 GPUs, CPU,
DRAM) every 10 s through `WATTLOG_DB_POOL=pgbouncer` (no connection held
between flushes, no server-side prepared statements). Here `--procs` worker
processes share the `--nodes` hosts: each paces its hosts' flushes evenly over
each 10 s round, so the fleet sends the same rows at the same rate (nodes / 10
flushes per second) when the machine keeps up; it says so when it does not.
Before the rounds the run's hour is filled with `--fill` rows (other hosts), so
the flushes meet an hour already that full. Printed: flush p50/p99 by round
(with the rows already in the hour), the flush rate achieved against the rate
needed, PostgreSQL's and pgbouncer's CPU, each worker's memory at the first and
last round, the hosts present in the run's totals, and `wattlog table` on the run.

    .venv/bin/python -m bench.fleet_pgbouncer [--nodes 1000] [--procs 8] [--rounds 6] [--fill 460800]
        [--pool 20]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing as mp
import os
import resource
import statistics
import time
from pathlib import Path
from typing import Any

from bench.ingest import FLUSH_S, flush_rows
from bench.ledger_fleet import fill
from tests.integration.pgbouncer import running_pgbouncer
from tests.integration.postgres import running_postgres
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.connections import Connections
from wattlog.cli import main as wattlog
from wattlog.errors import LedgerError

FIRST_FLUSH = 200  # the fleet's flushes start past the fill's (its hosts are others anyway)


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


def worker(url: str, hosts: list[str], rounds: int, start_at: float, out: Any) -> None:
    """Flush each host once per round, spread over the round; put (latencies by round, MiB by round)."""
    ledger = Ledger(make_engine(url, connections=Connections(pgbouncer=True)))
    latencies: list[list[float]] = [[] for _ in range(rounds)]
    memory: list[float] = []
    late = 0
    spooled: list[tuple[str, int]] = []
    for round_ in range(rounds):
        for index, host in enumerate(hosts):
            due = start_at + round_ * FLUSH_S + index * FLUSH_S / len(hosts)
            wait = due - time.time()
            if wait > 0:
                time.sleep(wait)
            else:
                late += 1
            t = time.perf_counter()
            try:
                ledger.record_intervals("fleet", flush_rows(host, FIRST_FLUSH + round_))
                latencies[round_].append(time.perf_counter() - t)
            except LedgerError:  # an agent spools the flush and replays it: here, after the rounds
                spooled.append((host, round_))
        memory.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    failed = len(spooled)
    for _ in range(5):
        spooled = [flush for flush in spooled if not _stored(ledger, *flush)]
    ledger.engine.dispose()
    out.put((latencies, memory, late, failed, len(spooled)))


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
        fill(ledger, run_id, args.fill, 0)
        url = bouncer.url(direct.rsplit("/", 1)[1])
        hosts = [f"node{n:04d}" for n in range(args.nodes)]
        out: Any = mp.get_context("fork").Queue()
        start_at = time.time() + 3.0
        procs = [
            mp.get_context("fork").Process(
                target=worker, args=(url, hosts[p :: args.procs], args.rounds, start_at, out)
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
        wall, cpu = time.time() - max(start_at, wall0), server_cpu_s(roots) - cpu0
        lines = _lines(args, results, wall, cpu)
        totals = ledger.energy_totals("fleet")
        present = {t.host for t in totals} & set(hosts)
        expected = args.rounds * sum(sum(r.energy_j for r in flush_rows(h, 0)) for h in hosts)
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
        f"{args.nodes} nodes in {args.procs} processes through pgbouncer (transaction mode, "
        f"{args.pool} server connections), {args.rounds} rounds of 10 s"
    ]
    for round_ in range(args.rounds):
        ms = sorted(1000 * s for result in results for s in result[0][round_]) or [float("nan")]
        in_hour = args.fill + round_ * args.nodes * 10
        p50, p99 = statistics.median(ms), ms[int(0.99 * (len(ms) - 1))]
        lines.append(
            f"  round {round_ + 1}: {in_hour:>9,} rows in the hour | flush p50 {p50:7.1f} ms"
            f" p99 {p99:7.1f} ms"
        )
    flushes = args.nodes * args.rounds
    late = sum(result[2] for result in results)
    lines.append(
        f"  {flushes:,} flushes ({10 * flushes:,} rows) in {wall_s:.1f} s: {flushes / wall_s:.1f} flushes/s "
        f"against {args.nodes / FLUSH_S:.0f} needed; {late:,} flushes started late"
    )
    failed, lost = sum(result[3] for result in results), sum(result[4] for result in results)
    lines.append(
        f"  {failed:,} flushes refused or timed out, replayed after the rounds; {lost:,} still not stored"
    )
    lines.append(f"  PostgreSQL + pgbouncer CPU: {cpu_s:.1f} s = {cpu_s / wall_s:.2f} cores")
    first = [result[1][0] for result in results]
    last = [result[1][-1] for result in results]
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
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--fill", type=int, default=460_800, help="rows already in the hour (other hosts)")
    parser.add_argument("--pool", type=int, default=20, help="pgbouncer's server connections")
    for line in bench(parser.parse_args()):
        print(line, flush=True)


if __name__ == "__main__":
    main()
