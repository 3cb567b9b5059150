"""Many nodes on real engines: N node agents into one PostgreSQL ledger, one Prometheus, VictoriaMetrics.

Each node is its own process running ``wattlog node`` (the command a cluster runs
once per node under SLURM), with its own host name, SLURM variables, simulated
GPUs of unequal load, and the ledger as its sink. Prometheus discovers the
agents through a file_sd targets file (the run's name as a target label) and
remote-writes every sample to VictoriaMetrics. At the end the cluster's Table 19
is computed three ways, from the ledger, Prometheus and VictoriaMetrics:

    .venv/bin/python -m bench.cluster [--nodes 64] [--gpus 8] [--seconds 120] [--period-s 1]
                                      [--flush-s 10] [--scrape-s 5] [--sample-nodes K]
    .venv/bin/python -m bench.cluster --replay [--nodes 1000] ...   # bench/cluster_replay.py: each
                                      store's ceiling against 1,000 x 8 GPUs of recorded node traffic

The ledger is migrated once before any agent starts (concurrent first opens of a
new ledger race on Alembic's version table until the migration lock lands).
Prometheus and VictoriaMetrics totals are each counter's last value in the run's
window (every agent starts inside it and none restarts), and every agent keeps
serving after it stops until the next scrape has read its final counters
(``--linger-s`` caps that wait at three scrape intervals), so the last scrape
holds what the ledger stored.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bench.cluster_report import (
    ClusterReport,
    FlushLine,
    ledger_figures,
    print_report,
    store_figures,
    three_ways,
)
from wattlog.accounting.ledger import make_engine
from wattlog.telemetry.job import compress_nodelist, sampled_nodes

_URL_LINE = re.compile(r"metrics at (http://\S+/metrics)")
_FLUSH_LINE = re.compile(r"ledger (\d+) rows in (\d+) flushes, latency p50 ([\d.]+) ms p99 ([\d.]+) ms")


@dataclass
class ClusterConfig:
    """The simulated cluster."""

    nodes: int = 64
    """Node agents (processes)."""
    gpus: int = 8
    """Simulated GPUs per node."""
    seconds: float = 120.0
    """How long each node measures."""
    period_s: float = 1.0
    """Sampling period of every agent (what 2 cores carry for 64 agents)."""
    flush_s: float = 10.0
    """Ledger flush interval of every agent."""
    scrape_s: float = 5.0
    """Prometheus scrape interval."""
    start_batch: int = 8
    """Nodes started at once (imports cost ~1 CPU-second each)."""
    sample_nodes: int | None = None
    """Measure only this many nodes (the rest extrapolated)."""
    run: str = "cluster"
    """The run's name."""
    site: str = "jupiter"
    """Site of the run's footprint."""
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="wattlog-cluster-")))
    """Node logs and the targets file."""

    @property
    def hosts(self) -> list[str]:
        """The nodes' host names."""
        return [f"node{i:02d}" for i in range(self.nodes)]

    def load(self, index: int) -> float:
        """Unequal nodes: simulated GPU power scaled between 0.6 and 1.0."""
        return 0.6 + 0.4 * (index % 5) / 4


@dataclass
class _Node:
    host: str
    process: subprocess.Popen[bytes]
    log: Path
    url: str | None = None
    rss_bytes: int = 0
    uss_bytes: int = 0


def run_cluster(
    config: ClusterConfig, ledger_url: str, prometheus: object, victoria: object
) -> ClusterReport:
    """Start the nodes against running servers, let them measure, and gather every figure.

    Args:
        config: The cluster.
        ledger_url: An empty PostgreSQL database (migrated here, once, before any node starts).
        prometheus: A started Prometheus (tests.integration.servers.Prometheus) whose file_sd
            reads ``config.workdir / "targets.json"`` and which remote-writes to `victoria`.
        victoria: A started VictoriaMetrics (queried with the same API).
    """
    make_engine(ledger_url).dispose()  # migrate once: concurrent first opens race on the version table
    started_s = time.time()
    nodes = _start_nodes(config, ledger_url, prometheus)
    failed = [n.host for n in nodes if n.url is None]
    time.sleep(min(config.seconds * 0.5, 3 * config.scrape_s))  # a few scrapes with every node up
    _measure_memory(nodes)
    scrape = _scrape_figures(prometheus, config)
    deadline = time.monotonic() + config.seconds + 6 * config.scrape_s + 120
    for node in nodes:
        node.process.wait(timeout=max(1.0, deadline - time.monotonic()))
    ended_s = time.time()
    final_scraped = _final_scraped(prometheus, config, started_s, ended_s)
    exit_codes = {n.host: n.process.returncode for n in nodes}
    flushes = [_flush_line(n) for n in nodes if n.url is not None]
    ways = three_ways(config, ledger_url, prometheus, victoria, started_s, ended_s)
    ledger = ledger_figures(config, ledger_url, started_s, ended_s)
    victoria_figures = store_figures(victoria)
    return ClusterReport(
        config=config,
        failed_starts=failed,
        exit_codes=exit_codes,
        rss_bytes=[n.rss_bytes for n in nodes if n.rss_bytes],
        uss_bytes=[n.uss_bytes for n in nodes if n.uss_bytes],
        scrape=scrape,
        flushes=[f for f in flushes if f is not None],
        ledger=ledger,
        ways=ways,
        seconds=ended_s - started_s,
        victoria=victoria_figures,
        final_scraped=final_scraped,
    )


def targets_path(config: ClusterConfig) -> Path:
    """The file_sd targets file Prometheus watches."""
    return config.workdir / "targets.json"


def scrape_config(config: ClusterConfig) -> dict[str, object]:
    """The Prometheus scrape job over the nodes (file service discovery)."""
    return {
        "job_name": "wattlog-nodes",
        "honor_labels": True,  # keep the agent's own host label
        "scrape_interval": f"{config.scrape_s:g}s",
        "scrape_timeout": f"{min(config.scrape_s, 10):g}s",
        "file_sd_configs": [{"files": [str(targets_path(config))], "refresh_interval": "2s"}],
    }


def prepare(config: ClusterConfig) -> None:
    """Create the work folder and an empty targets file (before Prometheus starts watching it)."""
    config.workdir.mkdir(parents=True, exist_ok=True)
    _write_targets(config, [])


def _start_nodes(config: ClusterConfig, ledger_url: str, prometheus: object) -> list[_Node]:
    """Start the nodes in batches, each only once Prometheus scrapes its port.

    Prometheus's file discovery takes 1-6 s to pick up a changed targets file; a node
    started before that lives through its first scrapes unseen, and one that saw fewer
    than two scrapes does not wait for a final one at close, so its last counters would
    never reach Prometheus (3 of 6 four-node runs failed that way under load). Each
    batch's ports are picked and listed first, and the nodes start once Prometheus
    reports them as targets, so every node is scraped from its first second.
    """
    prepare(config)
    nodelist = compress_nodelist(config.hosts)
    nodes: list[_Node] = []
    listed: list[str] = []
    serving = set(sampled_nodes(config.nodes, config.sample_nodes))  # the others never serve metrics
    for first in range(0, config.nodes, config.start_batch):
        indices = range(first, min(config.nodes, first + config.start_batch))
        ports = {index: _free_port() for index in indices}
        listed += [f"127.0.0.1:{ports[index]}" for index in indices if index in serving]
        _write_targets(config, listed)
        _wait_until_targets(prometheus, listed, timeout_s=60.0)
        batch = [_spawn(config, ledger_url, index, nodelist, ports[index]) for index in indices]
        _wait_for_urls(batch, timeout_s=120.0)
        nodes.extend(batch)
    return nodes


def _free_port() -> int:
    """A loopback port nothing listens on now (the node binds it moments later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_targets(prometheus: object, addresses: list[str], timeout_s: float) -> None:
    """Wait until Prometheus's active targets hold every address (its discovery has read the file)."""
    url = f"{prometheus.url}/api/v1/targets?state=active"  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout_s
    while True:
        with urllib.request.urlopen(url, timeout=10) as answer:
            targets = json.load(answer)["data"]["activeTargets"]
        known = {t["labels"].get("instance") for t in targets}
        if known >= set(addresses):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"Prometheus did not discover {sorted(set(addresses) - known)} in {timeout_s:g} s"
            )
        time.sleep(0.2)


def _spawn(config: ClusterConfig, ledger_url: str, index: int, nodelist: str, port: int) -> _Node:
    host = config.hosts[index]
    log = config.workdir / f"{host}.log"
    args = [
        sys.executable, "-m", "wattlog", "node",
        "--run", config.run, "--db", ledger_url, "--host", host, "--site", config.site,
        "--port", str(port), "--period-ms", f"{config.period_s * 1000:g}", "--flush-s", f"{config.flush_s:g}",
        "--seconds", f"{config.seconds:g}", "--linger-s", f"{3 * config.scrape_s:g}",
        "--simulate", str(config.gpus), "--simulate-load", f"{config.load(index):.3f}",
        "--lock-dir", str(config.workdir / "locks"),  # one machine: its CPU is measured by one agent
    ]  # fmt: skip
    if config.sample_nodes is not None:
        args += ["--sample-nodes", str(config.sample_nodes)]
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "SLURM_JOB_ID": "4242",
        "SLURM_NNODES": str(config.nodes),
        "SLURM_NODEID": str(index),
        "SLURM_NODELIST": nodelist,
    }
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    return _Node(host, process, log)


def _wait_for_urls(batch: list[_Node], timeout_s: float) -> None:
    """Wait until each node printed its metrics URL (or its sampled-out line), or exited."""
    deadline = time.monotonic() + timeout_s
    pending = list(batch)
    while pending and time.monotonic() < deadline:
        for node in list(pending):
            text = node.log.read_text(errors="replace") if node.log.exists() else ""
            found = _URL_LINE.search(text)
            if found:
                node.url = found.group(1)
                pending.remove(node)
            elif "sampled out" in text:
                node.url = ""
                pending.remove(node)
            elif node.process.poll() is not None:
                pending.remove(node)
        time.sleep(0.2)


def _write_targets(config: ClusterConfig, addresses: list[str]) -> None:
    groups = [{"targets": [address], "labels": {"run": config.run}} for address in addresses]
    path = targets_path(config)
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(groups))
    scratch.replace(path)  # atomic: Prometheus never reads half a file


def _measure_memory(nodes: list[_Node]) -> None:
    for node in nodes:
        try:
            info = psutil.Process(node.process.pid).memory_full_info()
        except (psutil.Error, OSError):
            continue
        node.rss_bytes, node.uss_bytes = int(info.rss), int(getattr(info, "uss", 0))


def _scrape_figures(prometheus: object, config: ClusterConfig) -> dict[str, float]:
    query = prometheus.query  # type: ignore[attr-defined]
    job = '{job="wattlog-nodes"}'

    def one(expr: str) -> float:
        result = query(expr)
        return float(result[0]["value"][1]) if result else float("nan")

    return {
        "targets_up": one(f"sum(up{job})"),
        "scrape_p50_s": one(f"quantile(0.5, scrape_duration_seconds{job})"),
        "scrape_max_s": one(f"max(scrape_duration_seconds{job})"),
        "samples_per_scrape": one(f"sum(scrape_samples_scraped{job})"),
        "series_per_target": one(f"avg(scrape_series_added{job})"),
        "all_series": one('count({__name__=~".+"})'),
        "run_series": one(f'count({{run="{config.run}"}})'),
    }


def _final_scraped(prometheus: object, config: ClusterConfig, started_s: float, ended_s: float) -> set[str]:
    """Hosts whose finished mark (scraped with their final counters) reached Prometheus: the linger worked."""
    window_s = int(ended_s - started_s) + 5
    expr = f'max by (host) (max_over_time(wattlog_agent_finished{{run="{config.run}"}}[{window_s}s]))'
    result = prometheus.query(expr, at_s=ended_s + 0.5)  # type: ignore[attr-defined]
    return {r["metric"].get("host", "") for r in result if float(r["value"][1]) == 1.0}


def _flush_line(node: _Node) -> FlushLine | None:
    found = _FLUSH_LINE.search(node.log.read_text(errors="replace"))
    if found is None:
        return None
    rows, flushes, p50, p99 = found.groups()
    return FlushLine(node.host, int(rows), int(flushes), float(p50) / 1000, float(p99) / 1000)


def main(argv: list[str] | None = None) -> int:
    """Start PostgreSQL, VictoriaMetrics and Prometheus on loopback, run the cluster, print the report."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--period-s", type=float, default=1.0)
    parser.add_argument("--flush-s", type=float, default=10.0)
    parser.add_argument("--scrape-s", type=float, default=5.0)
    parser.add_argument("--start-batch", type=int, default=8)
    parser.add_argument("--sample-nodes", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="Keep the node logs and server folders.")
    args = parser.parse_args(argv)
    from tests.integration import servers as srv
    from tests.integration.postgres import running_postgres

    config = ClusterConfig(
        nodes=args.nodes,
        gpus=args.gpus,
        seconds=args.seconds,
        period_s=args.period_s,
        flush_s=args.flush_s,
        scrape_s=args.scrape_s,
        start_batch=args.start_batch,
        sample_nodes=args.sample_nodes,
    )
    prepare(config)
    with ExitStack() as stack:
        if not args.keep:  # registered first, so it runs last, after the servers stopped
            stack.callback(shutil.rmtree, config.workdir, ignore_errors=True)
        ledger_url = stack.enter_context(running_postgres()).create_database("cluster")
        victoria = srv.start_victoria_metrics(config.workdir / "victoria-metrics")
        stack.callback(victoria.stop)
        prometheus = srv.start_prometheus(
            config.workdir / "prometheus",
            scrape_interval_s=config.scrape_s,
            extra_scrape_configs=[scrape_config(config)],
            remote_write_urls=[f"{victoria.url}/api/v1/write"],
        )
        stack.callback(prometheus.stop)
        report = run_cluster(config, ledger_url, prometheus, victoria)
    print_report(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    if "--replay" in sys.argv[1:]:
        from bench.cluster_replay import main as replay

        sys.exit(replay([a for a in sys.argv[1:] if a != "--replay"]))
    sys.exit(main())
