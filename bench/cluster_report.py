"""The figures of bench/cluster.py: the ledger's rate, latency and bytes, and Table 19 three ways."""

from __future__ import annotations

import statistics
import time
import urllib.request
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from wattlog.accounting.carbon.sites import get_site, site_catalog
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.jobs import job_nodes
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.accounting.publishing.extrapolate import job_energy
from wattlog.accounting.publishing.footprint import footprint_for
from wattlog.accounting.publishing.prometheus_energy import energy_from_prometheus
from wattlog.accounting.publishing.render import TableFormat, TableRow, footnotes, render, show
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.telemetry.job import sampled_nodes

if TYPE_CHECKING:
    from bench.cluster import ClusterConfig

# table, indexes and TOAST of every partition: the partitioned parent itself holds none (sizing it
# printed 0 bytes per GPU-hour once the table was partitioned by day, revision 0014)
_SIZE = text("SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('energy_record')")
_OVERLAP = text(
    "SELECT max(first_s), min(last_s) FROM "
    "(SELECT min(start_s) AS first_s, max(end_s) AS last_s FROM energy_record GROUP BY host) AS hosts"
)
TARGET = 0.001
"""The three totals must agree within 0.1 %."""


@dataclass(frozen=True, slots=True)
class FlushLine:
    """One node's ledger writes, from its last output line."""

    host: str
    rows: int
    flushes: int
    p50_s: float
    p99_s: float


@dataclass(frozen=True, slots=True)
class LedgerFigures:
    """Rows, their rate, and bytes before and after hourly compaction (PostgreSQL)."""

    raw_rows: int
    rows_per_s: float
    steady_rows_per_s: float
    gpu_hours: float
    raw_bytes: int
    hourly_rows: int
    hourly_bytes: int
    totals_kept: bool


@dataclass(frozen=True, slots=True)
class Ways:
    """The run's Table 19 row from each store, with each store's joules and hosts."""

    rows: list[TableRow]
    joules: dict[str, float]
    hosts: dict[str, set[str]]


@dataclass
class ClusterReport:
    """Everything bench/cluster.py measured."""

    config: ClusterConfig
    failed_starts: list[str]
    exit_codes: dict[str, int | None]
    rss_bytes: list[int]
    uss_bytes: list[int]
    scrape: dict[str, float]
    flushes: list[FlushLine]
    ledger: LedgerFigures
    ways: Ways
    seconds: float
    victoria: dict[str, float] = field(default_factory=dict)
    final_scraped: set[str] | None = None
    """Hosts whose final counters Prometheus read (wattlog_agent_finished = 1); None: not asked."""
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        c = self.config
        expected = {c.hosts[i] for i in sampled_nodes(c.nodes, c.sample_nodes)}
        if self.failed_starts:
            self.problems.append(f"failed starts: {', '.join(self.failed_starts)}")
        bad = {h: code for h, code in self.exit_codes.items() if code != 0}
        if bad:
            self.problems.append(f"nodes exited non-zero: {bad}")
        for store, hosts in self.ways.hosts.items():
            if hosts != expected:
                missing = sorted(expected - hosts)
                self.problems.append(f"{store}: {len(hosts)} of {len(expected)} nodes; missing {missing[:8]}")
        for store, diff in self.differences().items():
            if not abs(diff) <= TARGET:
                self.problems.append(f"{store} differs from the ledger by {diff:+.4%} (target 0.1 %)")
        if self.final_scraped is not None and self.final_scraped != expected:
            unread = sorted(expected - self.final_scraped)
            self.problems.append(f"Prometheus never read the final counters of {unread[:8]}")
        if not self.ledger.totals_kept:
            self.problems.append("compaction changed the ledger's total")

    @property
    def ok(self) -> bool:
        """Every target met."""
        return not self.problems

    def differences(self) -> dict[str, float]:
        """(store - ledger) / ledger for Prometheus and VictoriaMetrics."""
        base = self.ways.joules["ledger"]
        return {
            k: (v - base) / base if base else float("nan")
            for k, v in self.ways.joules.items()
            if k != "ledger"
        }


def three_ways(
    config: ClusterConfig, ledger_url: str, prometheus: Any, victoria: Any, started_s: float, ended_s: float
) -> Ways:
    """End the run and compute its Table 19 row from the ledger, Prometheus and VictoriaMetrics."""
    engine = make_engine(ledger_url)
    try:
        ledger = Ledger(engine)
        ledger.end_run(config.run)
        run = ledger.get_run(config.run)
        nodes = job_nodes(ledger, run.name)
        ledger_row = run_row(ledger, run, TableOptions(catalog=site_catalog(None)))
        ledger_rows = ledger.energy_totals(run.name)
    finally:
        engine.dispose()
    window = (started_s - 1.0, ended_s + 1.0)
    from_prometheus = _prom_rows(prometheus.url, config.run, window)
    from_victoria = _wait_for_same(victoria.url, config.run, window, from_prometheus)
    site = get_site(config.site)
    rows = [_relabel(ledger_row, "ledger (PostgreSQL)")]
    for label, found in (("Prometheus", from_prometheus), ("VictoriaMetrics", from_victoria)):
        energy = job_energy(found, nodes.node_count)
        if energy is None:
            rows.append(TableRow(label, None, None, None, None, None, None, "none", notes=("no energy",)))
        else:
            note = f"last counter values of run={config.run}, {len({r.host for r in found})} hosts"
            rows.append(TableRow.from_footprint(label, footprint_for(energy, site), notes=(note,)))
    joules = {
        "ledger": _joules(ledger_rows, nodes.node_count),
        "Prometheus": _joules(from_prometheus, nodes.node_count),
        "VictoriaMetrics": _joules(from_victoria, nodes.node_count),
    }
    hosts = {
        "ledger": {r.host for r in ledger_rows},
        "Prometheus": {r.host for r in from_prometheus},
        "VictoriaMetrics": {r.host for r in from_victoria},
    }
    return Ways(rows, joules, hosts)


def _prom_rows(url: str, run: str, window: tuple[float, float]) -> list[EnergyTotal]:
    return energy_from_prometheus(url, window[0], window[1], matchers={"run": run}, since_start=True)


def _wait_for_same(
    url: str, run: str, window: tuple[float, float], reference: list[EnergyTotal], timeout_s: float = 60.0
) -> list[EnergyTotal]:
    """VictoriaMetrics' rows once they hold every series Prometheus has (remote_write lags a few s)."""
    deadline = time.monotonic() + timeout_s
    want = sum(r.energy_j for r in reference)
    while True:
        rows = _prom_rows(url, run, window)
        got = sum(r.energy_j for r in rows)
        if (len(rows) >= len(reference) and abs(got - want) <= 1e-9 * max(1.0, want)) or (
            time.monotonic() > deadline
        ):
            return rows
        time.sleep(1.0)


def _joules(rows: Any, node_count: int) -> float:
    energy = job_energy(rows, node_count)
    if energy is None:
        return 0.0
    value = energy.it_mwh
    return float(value if isinstance(value, float | int) else value.mid) * 3.6e9


def _relabel(row: TableRow, label: str) -> TableRow:
    from dataclasses import replace

    return replace(row, model=label)


def store_figures(victoria: Any) -> dict[str, float]:
    """VictoriaMetrics' own figures: bytes on disk and rows (samples) stored, from its /metrics."""
    body = urllib.request.urlopen(f"{victoria.url}/metrics", timeout=10).read().decode()
    sums = {"vm_data_size_bytes": 0.0, "vm_rows_added_to_storage_total": 0.0}
    for line in body.splitlines():
        name = line.split("{")[0].split(" ")[0]
        if name in sums:
            sums[name] += float(line.rsplit(" ", 1)[1])
    return {"bytes": sums["vm_data_size_bytes"], "rows": sums["vm_rows_added_to_storage_total"]}


def ledger_figures(config: ClusterConfig, ledger_url: str, started_s: float, ended_s: float) -> LedgerFigures:
    """Raw rows, their rate and bytes; then compact every hour and measure again (totals must stay)."""
    engine = make_engine(ledger_url)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            raw_rows, first_s, last_s, total_j = connection.execute(
                text("SELECT count(*), min(start_s), max(end_s), sum(energy_j) FROM energy_record")
            ).one()
            # The stretch in which every node was measuring (starts are staggered): the steady rate.
            overlap = connection.execute(_OVERLAP).one()
            steady_rows = connection.execute(
                text("SELECT count(*) FROM energy_record WHERE start_s >= :lo AND start_s < :hi"),
                {"lo": overlap[0], "hi": overlap[1]},
            ).scalar_one()
            gpu_hours = connection.execute(
                text("SELECT coalesce(sum(end_s - start_s), 0) / 3600 FROM energy_record WHERE kind = 'gpu'")
            ).scalar_one()
            connection.execute(text("VACUUM ANALYZE energy_record"))
            raw_bytes = connection.execute(_SIZE).scalar_one()
            Ledger(engine).compact_hourly(0.0, now_s=ended_s + 3600.0)
            connection.execute(text("VACUUM FULL energy_record"))
            hourly_bytes = connection.execute(_SIZE).scalar_one()
            hourly_rows, after_j = connection.execute(
                text("SELECT count(*), sum(energy_j) FROM energy_record")
            ).one()
    finally:
        engine.dispose()
    span_s = (last_s - first_s) if raw_rows else 0.0
    lo, hi = overlap
    return LedgerFigures(
        raw_rows=int(raw_rows),
        rows_per_s=raw_rows / span_s if span_s > 0 else 0.0,
        steady_rows_per_s=steady_rows / (hi - lo) if hi > lo else 0.0,
        gpu_hours=float(gpu_hours),
        raw_bytes=int(raw_bytes),
        hourly_rows=int(hourly_rows),
        hourly_bytes=int(hourly_bytes),
        totals_kept=abs((after_j or 0.0) - (total_j or 0.0)) <= 1e-9 * max(1.0, total_j or 0.0),
    )


def print_report(report: ClusterReport) -> None:
    """Print every figure, the three-way table and the verdict."""
    c, lf = report.config, report.ledger
    measured = len(sampled_nodes(c.nodes, c.sample_nodes))
    print(
        f"cluster: {c.nodes} node processes x {c.gpus} simulated GPUs, {measured} measuring, "
        f"period {c.period_s:g} s, flush {c.flush_s:g} s, scrape {c.scrape_s:g} s, "
        f"{c.seconds:g} s each; wall {report.seconds:.0f} s (timings on shared cores: noisy)"
    )
    print(
        f"stands in for: {c.nodes} nodes' agents; they sample every 0.025 s, these every {c.period_s:g} s "
        f"({c.period_s / 0.025:g}x fewer samples: the ledger's rows, one per device per flush, are the "
        "same; the agents' own CPU is not measured here, see bench.overhead)"
    )
    print(f"starts: {len(report.exit_codes) - len(report.failed_starts)} of {c.nodes} ok; exit codes "
          f"{sorted(set(report.exit_codes.values()), key=str)}")  # fmt: skip
    if report.rss_bytes:
        rss = [b / 2**20 for b in report.rss_bytes]
        uss = [b / 2**20 for b in report.uss_bytes] or [float("nan")]
        print(
            f"memory per agent: RSS mean {statistics.mean(rss):.0f} MiB (max {max(rss):.0f}), "
            f"USS mean {statistics.mean(uss):.0f} MiB; all agents RSS {sum(rss) / 1024:.2f} GiB"
        )
    s = report.scrape
    print(
        f"Prometheus: {s['targets_up']:.0f} targets up, "
        f"scrape duration p50 {s['scrape_p50_s'] * 1000:.1f} ms max {s['scrape_max_s'] * 1000:.1f} ms, "
        f"{s['samples_per_scrape']:.0f} samples per round, "
        f"{s['run_series']:.0f} series of the run, {s['all_series']:.0f} series in all"
    )
    if report.flushes:
        p99 = sorted(f.p99_s for f in report.flushes)
        p50 = statistics.median(f.p50_s for f in report.flushes)
        print(
            f"ledger writes: {sum(f.flushes for f in report.flushes)} flushes; "
            f"latency p50 {p50 * 1000:.1f} ms, p99 median over nodes {statistics.median(p99) * 1000:.1f} ms, "
            f"worst node's p99 {p99[-1] * 1000:.1f} ms"
        )
    rows_per_gpu_hour_raw = 3600 / c.flush_s * (c.gpus + 2) / c.gpus
    rows_per_gpu_hour_hourly = (c.gpus + 2) / c.gpus
    raw_per_row = lf.raw_bytes / lf.raw_rows if lf.raw_rows else float("nan")
    hourly_per_row = lf.hourly_bytes / lf.hourly_rows if lf.hourly_rows else float("nan")
    print(
        f"ledger rows: {lf.raw_rows} raw rows, {lf.steady_rows_per_s:.1f} rows/s while every node ran "
        f"({lf.rows_per_s:.1f} rows/s over the staggered whole); {lf.gpu_hours:.2f} GPU-hours; "
        f"{lf.raw_bytes / 2**20:.2f} MiB with indexes = "
        f"{lf.raw_bytes / max(lf.gpu_hours, 1e-9) / 1024:.0f} KiB per GPU-hour measured"
    )
    print(
        f"ledger bytes per GPU-hour, steady state: raw {raw_per_row * rows_per_gpu_hour_raw / 1024:.0f} KiB "
        f"({raw_per_row:.0f} B/row x {rows_per_gpu_hour_raw:.0f} rows), compacted hourly "
        f"{hourly_per_row * rows_per_gpu_hour_hourly:.0f} B ({lf.hourly_rows} hourly rows, "
        f"{hourly_per_row:.0f} B/row incl. indexes); totals kept by compaction: {lf.totals_kept}"
    )
    vm = report.victoria
    if vm.get("rows"):
        print(
            f"VictoriaMetrics: {vm['rows']:.0f} samples stored in {vm['bytes'] / 2**20:.2f} MiB "
            f"({vm['bytes'] / vm['rows']:.2f} B/sample, parts not yet merged)"
        )
    notes = [*footnotes(report.ways.rows)]
    show(render(report.ways.rows, TableFormat.MARKDOWN, notes))
    for store, joules in report.ways.joules.items():
        print(f"  {store:16s} {joules:14.1f} J   hosts {len(report.ways.hosts[store])}")
    for store, diff in report.differences().items():
        print(f"  {store} - ledger: {diff:+.5%}")
    print("targets met" if report.ok else "TARGETS MISSED: " + "; ".join(report.problems))
