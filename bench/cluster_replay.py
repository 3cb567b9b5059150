"""1,000 nodes x 8 GPUs replayed on one machine: each store's write ceiling beside what the fleet needs.

    .venv/bin/python -m bench.cluster --replay [--nodes 1000] [--seconds 30]

One real agent (``wattlog agent --simulate 8``) is scraped once: its exposition is one node's
recorded scrape, and ``bench.ingest.flush_rows`` is one node's recorded ledger flush (8 GPUs,
CPU, DRAM). A handful of processes then offer the fleet's write rate to each store, and
more, for ``--seconds`` each (fewer processes, same write rate):

- PostgreSQL ledger: worker processes of threads, each a ``LedgerSink``, write flushes paced
  at nodes / flush_s (what the fleet writes), then unpaced (the ceiling);
- Prometheus: a replay server serves the recorded scrape for every node (host label and
  counters per node; ``--nodes-per-target`` nodes in one response keeps the server out of the
  way), scraped every ``--scrape-s`` (the fleet's rate), then every 1 s (5x at 5 s): samples
  appended per second, read from Prometheus' own counter;
- VictoriaMetrics: receives Prometheus' remote write during both phases (rows inserted per
  second), then takes the recorded lines straight through its import API from threads,
  unpaced (its ceiling).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.ingest import FLUSH_S, flush_rows
from wattlog.accounting.ledger import Ledger, LedgerSink, RunSpec, make_engine
from wattlog.errors import LedgerError

_URL = re.compile(r"metrics at (http://\S+/metrics)")
_SAMPLE = re.compile(r"^([^\s{]+)(\{.*\})?\s+(\S+)$")


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    """The fleet replayed and how hard each store is pushed."""

    nodes: int = 1000
    gpus: int = 8
    seconds: float = 40.0
    scrape_s: float = 5.0
    nodes_per_target: int = 50
    processes: int = 4
    threads: int = 10


def record_node(workdir: Path, gpus: int) -> list[tuple[str, str, float]]:
    """One real agent's scrape: (name, labels, value) per sample (comments dropped)."""
    log = workdir / "recorded-agent.log"
    command = [sys.executable, "-m", "wattlog", "agent", "--simulate", str(gpus), "--port", "0"]
    command += ["--seconds", "8", "--period-ms", "100", "--flush-s", "1", "--linger-s", "0"]
    with log.open("wb") as out:
        agent = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not (found := _URL.search(log.read_text(errors="replace"))):
            if time.monotonic() > deadline or agent.poll() is not None:
                raise RuntimeError(f"the recording agent did not serve metrics:\n{log.read_text()}")
            time.sleep(0.2)
        time.sleep(3.0)  # a few flushes: every series exists
        with urllib.request.urlopen(found.group(1), timeout=10) as answer:
            text = answer.read().decode()
    finally:
        agent.wait(timeout=60)
    samples = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if line.startswith("#") or match is None:
            continue
        samples.append((match.group(1), match.group(2) or "", float(match.group(3))))
    return samples


class Replay:
    """The recorded scrape as every node's: target t serves nodes t*k .. t*k+k-1 (k per response)."""

    def __init__(self, samples: list[tuple[str, str, float]], config: ReplayConfig) -> None:
        self.config = config
        self.targets = -(-config.nodes // config.nodes_per_target)
        self._samples = [
            (name, re.sub(r'host="[^"]*"', 'host="{HOST}"', labels) if labels else '{host="{HOST}"}', value)
            for name, labels, value in samples
        ]
        self._payloads: list[bytes] = [b""] * self.targets
        self.requests = 0
        self.hung_up = 0
        self.rebuild(0)

    @property
    def series_per_node(self) -> int:
        """Samples in one node's scrape."""
        return len(self._samples)

    def rebuild(self, tick: int) -> None:
        """Advance the counters (a node's energy grows) and rebuild every response once."""
        k = self.config.nodes_per_target
        for target in range(self.targets):
            lines = []
            for node in range(target * k, min(self.config.nodes, (target + 1) * k)):
                host = f"node{node:04d}"
                for name, labels, value in self._samples:
                    grown = value + tick * 100.0 if name.endswith("_total") else value
                    lines.append(f"{name}{labels.replace('{HOST}', host)} {grown}\n")
            self._payloads[target] = "".join(lines).encode()

    def serve(self) -> ThreadingHTTPServer:
        """Serve /t/N on a free loopback port (a daemon thread)."""
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                body = replay._payloads[int(self.path.rsplit("/", 1)[1])]
                replay.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # a scrape that timed out hung up
                    replay.hung_up += 1

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def scrape_job(self, port: int, interval_s: float) -> dict[str, object]:
        """The Prometheus job over every target (one static group per target)."""
        groups = [
            {"targets": [f"127.0.0.1:{port}"], "labels": {"__metrics_path__": f"/t/{t}", "instance": f"t{t}"}}
            for t in range(self.targets)
        ]
        return {"job_name": "replay", "honor_labels": True, "scrape_interval": f"{interval_s:g}s",
                "scrape_timeout": f"{interval_s:g}s", "static_configs": groups}  # fmt: skip


def counter(url: str, name: str) -> float:
    """The sum of a counter on a server's own /metrics (all label sets)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def _flush_worker(
    url: str, run_id: int, writers: int, rate: float | None, seconds: float, queue: Any
) -> None:
    """One process: `writers` threads of flushes (paced at `rate` flushes/s per thread, or unpaced)."""
    ledger = Ledger(make_engine(url, migrate=False))
    results: list[tuple[int, int, list[float]]] = []
    lock = threading.Lock()
    name = multiprocessing.current_process().name

    def writer(index: int) -> None:
        sink = LedgerSink(ledger, run_id)
        done, failed, latencies = 0, 0, []
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            rows = flush_rows(f"{name}-w{index}-n{done % 64}", done // 64)
            t = time.perf_counter()
            try:
                sink.write(rows, [])
                done += 1
                latencies.append(time.perf_counter() - t)
            except LedgerError:
                failed += 1  # an agent would spool these rows: counted, never hidden
            if rate is not None:  # absolute deadlines: a late flush does not push the next ones back
                time.sleep(max(0.0, start + (done + failed) / rate - time.monotonic()))
        with lock:
            results.append((done, failed, latencies))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.put(results)


def ledger_phase(url: str, run_id: int, config: ReplayConfig, paced: bool) -> dict[str, float]:
    """Flushes/s stored (and refused) from the worker processes, paced at the fleet's rate or not."""
    writers = config.processes * config.threads
    rate = config.nodes / FLUSH_S / writers if paced else None
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    procs = [
        context.Process(target=_flush_worker, args=(url, run_id, config.threads, rate, config.seconds, queue))
        for _ in range(config.processes)
    ]
    t0 = time.monotonic()
    for proc in procs:
        proc.start()
    results = [r for _ in procs for r in queue.get(timeout=config.seconds + 300)]
    for proc in procs:
        proc.join()
    elapsed = time.monotonic() - t0
    done = sum(r[0] for r in results)
    latencies = sorted(x for r in results for x in r[2])
    return {
        "flushes_per_s": done / config.seconds,
        "refused": float(sum(r[1] for r in results)),
        "p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else float("nan"),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else float("nan"),
        "wall_s": elapsed,
    }


def _reload(prometheus: Any, workdir: Path, interval_s: float) -> None:
    """Set the replay job's scrape interval and reload Prometheus (its config is JSON, which is YAML)."""
    path = workdir / "prometheus.yml"
    config = json.loads(path.read_text())
    for job in config["scrape_configs"]:
        if job["job_name"] == "replay":
            job["scrape_interval"] = job["scrape_timeout"] = f"{interval_s:g}s"
    path.write_text(json.dumps(config))
    request = urllib.request.Request(f"{prometheus.url}/-/reload", method="POST")
    urllib.request.urlopen(request, timeout=30).close()


def scrape_phase(
    prometheus: Any, victoria: Any, replay: Replay, workdir: Path, interval_s: float
) -> dict[str, float]:
    """Offer the fleet's scrapes every `interval_s`: samples appended (Prometheus) and inserted (VM) per s."""
    _reload(prometheus, workdir, interval_s)
    time.sleep(2 * interval_s)  # every target scraped at the new interval
    appended, inserted = "prometheus_tsdb_head_samples_appended_total", "vm_rows_inserted_total"
    p0, v0, r0, t0 = (
        counter(prometheus.url, appended),
        counter(victoria.url, inserted),
        replay.requests,
        time.time(),
    )
    time.sleep(replay.config.seconds)
    p1, v1, r1, t1 = (
        counter(prometheus.url, appended),
        counter(victoria.url, inserted),
        replay.requests,
        time.time(),
    )
    job = '{job="replay"}'
    up = prometheus.query(f"sum(up{job})")
    slowest = prometheus.query(f"max(scrape_duration_seconds{job})")
    return {
        "offered": replay.config.nodes * replay.series_per_node / interval_s,
        "appended": (p1 - p0) / (t1 - t0),
        "inserted": (v1 - v0) / (t1 - t0),
        "served": (r1 - r0) / (t1 - t0),
        "up": float(up[0]["value"][1]) if up else float("nan"),
        "slowest_s": float(slowest[0]["value"][1]) if slowest else float("nan"),
    }


def victoria_ceiling(victoria: Any, replay: Replay, config: ReplayConfig) -> dict[str, float]:
    """The recorded lines straight into VictoriaMetrics' import API from threads, unpaced: rows/s."""
    stop = time.monotonic() + config.seconds
    errors: list[str] = []

    def push(offset: int) -> None:
        target = offset
        while time.monotonic() < stop:
            body = replay._payloads[target % replay.targets]
            request = urllib.request.Request(
                f"{victoria.url}/api/v1/import/prometheus", data=body, method="POST"
            )
            try:
                urllib.request.urlopen(request, timeout=30).close()
            except OSError as error:
                errors.append(str(error))
            target += config.threads

    v0, t0 = counter(victoria.url, "vm_rows_inserted_total"), time.time()
    threads = [threading.Thread(target=push, args=(i,)) for i in range(config.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    time.sleep(2.0)  # the last batches are counted once flushed
    v1, t1 = counter(victoria.url, "vm_rows_inserted_total"), time.time()
    return {"rows_per_s": (v1 - v0) / (t1 - t0 - 2.0), "errors": float(len(errors))}


def _ticks(replay: Replay, interval_s: float, stop: threading.Event) -> None:
    """Advance every node's counters once per scrape interval (a growing energy, as a real node's)."""
    tick = 0
    while not stop.wait(interval_s):
        tick += 1
        replay.rebuild(tick)


def _ledger_lines(url: str, config: ReplayConfig) -> None:
    """The ledger at the fleet's rate, then unpaced."""
    need = config.nodes / FLUSH_S
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("replay", RunSpec(project="bench"))
    assert run.id is not None
    for paced in (True, False):
        r = ledger_phase(url, run.id, config, paced)
        what = f"paced at the fleet's {need:g} flushes/s" if paced else "unpaced (ceiling)"
        print(
            f"PostgreSQL ledger, {what}: {r['flushes_per_s']:,.1f} flushes/s stored = "
            f"{r['flushes_per_s'] * 10:,.0f} rows/s (x{r['flushes_per_s'] / need:.2f} of the fleet), "
            f"{r['refused']:.0f} refused, flush p50 {r['p50_ms']:.1f} ms p99 {r['p99_ms']:.1f} ms"
        )
    ledger.engine.dispose()


def _store_lines(prometheus: Any, victoria: Any, replay: Replay, workdir: Path) -> None:
    """Prometheus (and VictoriaMetrics by remote write) at the fleet's scrape rate and at 1 s."""
    for interval in (replay.config.scrape_s, 1.0):
        r = scrape_phase(prometheus, victoria, replay, workdir / "prometheus", interval)
        print(
            f"scrapes every {interval:g} s: offered {r['offered']:,.0f} samples/s; Prometheus appended "
            f"{r['appended']:,.0f}/s (x{r['appended'] / r['offered']:.2f}), {r['up']:.0f} of "
            f"{replay.targets} targets up, slowest scrape {r['slowest_s']:.2f} s, replay served "
            f"{r['served']:.1f} responses/s; VictoriaMetrics inserted {r['inserted']:,.0f}/s (remote write)"
        )
    r = victoria_ceiling(victoria, replay, replay.config)
    fleet = replay.config.nodes * replay.series_per_node / replay.config.scrape_s
    print(
        f"VictoriaMetrics import, unpaced (ceiling): {r['rows_per_s']:,.0f} rows/s "
        f"(x{r['rows_per_s'] / fleet:.1f} of the fleet's {fleet:,.0f}/s), {r['errors']:.0f} refused"
    )


def main(argv: list[str] | None = None) -> int:
    """Record a node, start PostgreSQL, VictoriaMetrics and Prometheus, push each, print the ceilings."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=40.0, help="Length of each measured phase.")
    parser.add_argument("--scrape-s", type=float, default=5.0)
    parser.add_argument("--nodes-per-target", type=int, default=50)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=10)
    args = parser.parse_args(argv)
    config = ReplayConfig(
        args.nodes,
        args.gpus,
        args.seconds,
        args.scrape_s,
        args.nodes_per_target,
        args.processes,
        args.threads,
    )
    from tests.integration import servers as srv
    from tests.integration.postgres import running_postgres

    with tempfile.TemporaryDirectory(prefix="wattlog-replay-") as folder, ExitStack() as stack:
        workdir = Path(folder)
        replay = Replay(record_node(workdir, config.gpus), config)
        print(
            f"recorded node: {replay.series_per_node} samples per scrape, 10 ledger rows per {FLUSH_S:g} s; "
            f"fleet {config.nodes} nodes x {config.gpus} GPUs replayed by {config.processes} processes x "
            f"{config.threads} threads (ledger) and {replay.targets} scrape targets of "
            f"{config.nodes_per_target} nodes; {config.seconds:g} s per phase"
        )
        _ledger_lines(stack.enter_context(running_postgres()).create_database("replay"), config)
        server = replay.serve()
        stack.callback(server.shutdown)
        victoria = srv.start_victoria_metrics(workdir / "victoria-metrics")
        stack.callback(victoria.stop)
        prometheus = srv.start_prometheus(
            workdir / "prometheus",
            extra_scrape_configs=[replay.scrape_job(server.server_address[1], config.scrape_s)],
            remote_write_urls=[f"{victoria.url}/api/v1/write"],
        )
        stack.callback(prometheus.stop)
        stop = threading.Event()
        stack.callback(stop.set)
        threading.Thread(target=_ticks, args=(replay, config.scrape_s, stop), daemon=True).start()
        _store_lines(prometheus, victoria, replay, workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
