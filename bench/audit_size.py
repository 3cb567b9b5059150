"""How big an audit bundle is per GPU-hour, and what a 1,024-GPU month would weigh.

Run: ``.venv/bin/python -m bench.audit_size [--gpus 8] [--hours 2] [--flush-s 10]``

Builds a run of GPUS GPU rows flushed every FLUSH_S seconds (10 s: the agent's default;
1 s: a 1 Hz series) over HOURS in a temporary SQLite ledger, bundles it with
`wattlog.accounting.publishing.audit.bundle.build_bundle` (rows, series, intensity, profiles,
exports), and prints
the compressed size per GPU-hour and scaled to 1,024 GPUs x 720 h (the files that grow with the
run scaled, the fixed ones once), against the 1 GB target: gzip and xz (lzma, a .tar.xz bundle),
each with its compression speed. Each GPU's power is drawn anew for every row, 700-796 W from a
seeded generator: no row predicts the next, so no coder is flattered (a real GPU's 10 s means
follow each other closely and cost less). Its flush edges are late by 0-40 ms, as an agent's
flush thread wakes when the scheduler lets it. Six times: rows as a ledger written before agents
recorded whole millijoules holds them (every digit of a double); rows as an agent records them
now (`EnergyFigure.to_millijoules` of a running total: accounting.publishing.audit.rows codes them in
millijoules), and folded hourly by `wattlog compact`; the same with each 8 GPUs' node's own rows
beside them (2 CPU packages, 2 DRAM, the BMC: still per GPU-hour), raw and folded; and rows the
agent's own sampler and integrator make from simulated H100s (~25 s more). Then a month whose
last 7 days are raw and the rest folded, GPU rows only and with the nodes' rows. The series are
the rows (accounting.publishing.audit.series): at the rows' resolution, 10 s by default; a 1 Hz bundle is
what `--flush-s 1` measures.
"""

from __future__ import annotations

import argparse
import gzip
import lzma
import random
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.audit.bundle import build_bundle
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.clock import FakeClock
from wattlog.records import EnergyFigure, EnergyInterval, Kind, Source, millijoules
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import TrainingTrace

T0 = 1_800_000_000.0
SAMPLE_S = 0.025
TARGET_GB = 1.0
MONTH_GPU_H = 737_280  # 1,024 GPUs x 720 h
MONTH_DAYS, RAW_DAYS = 30, 7
CASES = {
    "float": "joules with every digit of a double (a ledger written before whole millijoules)",
    "agent": "joules in whole millijoules (rows as an agent records them now)",
    "folded": "those folded hourly (`wattlog compact`)",
    "node": "those and each 8 GPUs' node: 2 CPU packages, 2 DRAM and the BMC (5 rows more a flush)",
    "node folded": "those folded hourly",
    "integrated": "rows made by the agent's own sampler and integrator (simulated H100s, 25 ms)",
}
NODE_DEVICES = (
    ("cpu0", Kind.CPU, 150.0, 350.0), ("cpu1", Kind.CPU, 150.0, 350.0),
    ("dram0", Kind.DRAM, 20.0, 40.0), ("dram1", Kind.DRAM, 20.0, 40.0),
    ("dcmi", Kind.NODE, 6000.0, 8000.0),
)  # fmt: skip
"""What an 8-GPU node adds to its GPUs' rows: name, kind and the range its power is drawn from, W."""
GROWING = ("rows/", "series.json", "gaps.json", "events.json")
"""The members that grow with the run.

rows/: the rows, one file per column, accounting.publishing.audit.rows.
"""


def main() -> None:
    """Print the bundle's size per GPU-hour and for a 1,024-GPU month: rows with every digit, rows in
    millijoules, those folded hourly and the agent's own; then a month whose last 7 days are raw and
    the rest folded."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--flush-s", type=float, default=10.0, help="row length: 10 (default), 1 (1 Hz)")
    args = parser.parse_args()
    per_gpu_hour = {}
    for case in CASES:
        print(
            f"{args.gpus} GPUs x {args.hours:g} h, rows (and series) every {args.flush_s:g} s, {CASES[case]}:"
        )
        month_gb = {}
        for name, (size, (growing, raw, seconds)) in bundle_sizes(args, case).items():
            per, fixed = growing / (args.gpus * args.hours), size - growing
            month_gb[name] = (per * MONTH_GPU_H + fixed) / 1e9
            per_gpu_hour[case, name] = (per, fixed)
            print(
                f"  {name}: bundle {size / 1e6:.3f} MB, fixed part {fixed / 1e3:.1f} kB, per GPU-hour "
                f"{per / 1e3:.3f} kB; a 1,024-GPU month: {month_gb[name]:.3f} GB "
                f"(compressing {raw / seconds / 1e6:.1f} MB/s)"
            )
        print(
            f"  target < {TARGET_GB:g} GB: {_verdict(month_gb['xz'])} with xz; gzip {month_gb['gzip']:.2f} GB"
        )
    for case, folded, what in (("agent", "folded", "GPU rows"), ("node", "node folded", "with nodes' rows")):
        (raw_per, fixed), (folded_per, _) = per_gpu_hour[case, "xz"], per_gpu_hour[folded, "xz"]
        kept = (raw_per * RAW_DAYS + folded_per * (MONTH_DAYS - RAW_DAYS)) / MONTH_DAYS * MONTH_GPU_H + fixed
        print(
            f"a 1,024-GPU month, {what}, its last "
            f"{RAW_DAYS} days raw, the rest folded hourly (`wattlog compact --older-than-days {RAW_DAYS}`), "
            f"xz: {kept / 1e9:.3f} GB: {_verdict(kept / 1e9)}"
        )
    if args.flush_s > 1:
        print(f"a 1 Hz series: ~{args.flush_s:g}x the raw per-GPU-hour figures (measure it with --flush-s 1)")


def _verdict(gb: float) -> str:
    return f"{'met' if gb < TARGET_GB else 'NOT met'} ({gb / TARGET_GB:.2f}x the target)"


def bundle_sizes(args: argparse.Namespace, case: str) -> dict[str, tuple[int, tuple[int, int, float]]]:
    """Per compression (gzip, xz): the bundle's bytes and its growing files' (see `_growing`)."""
    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger(make_engine(f"sqlite:///{folder}/l.db"), clock=FakeClock(wall_offset_s=T0))
        run = ledger.start_run("bench", RunSpec(site="jupiter"))
        steps = int(args.hours * 3600 / args.flush_s)
        for rows in _integrated_rows(args, steps) if case == "integrated" else _rows(args, case, steps):
            ledger.record_intervals(run.id, rows)
        ledger.end_run(run.id, end_s=T0 + steps * args.flush_s)
        if case.endswith("folded"):
            ledger.compact_hourly(0, now_s=T0 + steps * args.flush_s + 3600)
        options = TableOptions(catalog=site_catalog())
        sizes = {}
        for name, out in (("gzip", "b.tar.gz"), ("xz", "b.tar.xz")):
            bundle = build_bundle(ledger, "bench", options, Path(folder) / out)
            sizes[name] = (bundle.stat().st_size, _growing(bundle))
        return sizes


def _rows(args: argparse.Namespace, case: str, steps: int) -> Iterator[list[EnergyInterval]]:
    """Each flush's rows: every device's power drawn anew (GPUs 700-796 W), its band 5 % each side,
    from a running total as an integrator keeps one (in millijoules but for the "float" case)."""
    devices = [(f"GPU-{g:04d}", Kind.GPU, 700.0, 796.0) for g in range(args.gpus)]
    if case.startswith("node"):
        devices += [(f"{name}-{n}", *rest) for n in range(args.gpus // 8) for name, *rest in NODE_DEVICES]
    draw, totals = random.Random(24), [0.0] * len(devices)
    for k in range(steps):
        start, end = _edge(k, args.flush_s), _edge(k + 1, args.flush_s)
        rows = []
        for d, (device, kind, low_w, high_w) in enumerate(devices):
            joules = draw.uniform(low_w, high_w) * (end - start)
            figure = EnergyFigure(kind, Source.COUNTER, joules, joules * 0.95, joules * 1.05)
            before, totals[d] = totals[d], totals[d] + joules
            if case != "float":
                figure = figure.to_millijoules(millijoules(totals[d]) - millijoules(before))
            rows.append(EnergyInterval("n0", device, start, end, figure))
        yield rows


def _integrated_rows(args: argparse.Namespace, steps: int) -> Iterator[list[EnergyInterval]]:
    """Each flush's rows as an agent makes them: the real Sampler and Integrator reading simulated H100s
    every 25 ms, each GPU replaying its own seeded training trace (steps of varying length, checkpoints,
    never repeating), the band from the H100's sensor profile. The flush edges are on the clock's ticks."""
    clock = FakeClock(wall_offset_s=T0)
    trace = partial(TrainingTrace.generate, duration_s=steps * args.flush_s, vary="step")
    sensor = SimulatedSensor(simulated_gpus(args.gpus, lambda i: trace(seed=i)))
    integrator = Integrator(sensor.devices(), host="n0", clock=clock, period_s=SAMPLE_S)
    sampler = Sampler([sensor], integrator, period_s=SAMPLE_S, clock=clock)
    ticks = round(args.flush_s / SAMPLE_S)
    for k in range(steps * ticks + 1):
        clock.advance(k * SAMPLE_S - clock.monotonic())
        sampler.tick(k * SAMPLE_S)
        if k and k % ticks == 0:
            yield integrator.take_intervals()[0]


def _edge(k: int, flush_s: float) -> float:
    """The k-th flush edge of the host's devices: late by 0-40 ms (an agent's flush thread wakes when
    the scheduler lets it), so a time keeps every digit of a double."""
    late_s = 0.0 if k == 0 else ((k * 7_919) % 40_009) / 1e6
    return T0 + k * flush_s + late_s


def _growing(bundle: Path) -> tuple[int, int, float]:
    """The files that grow with the run (rows, series, gaps, events), compressed together in the tar's
    order as the bundle's one stream compresses them: their bytes, their raw bytes, and the seconds
    compressing took. (Each alone would add a header per file: 0.1 B a row of this bench's run.)"""
    compress: Callable[[bytes], bytes] = gzip.compress if bundle.name.endswith(".gz") else lzma.compress
    with tarfile.open(bundle) as tar:
        raw = b"".join(
            f.read() for m in tar.getmembers() if m.name.startswith(GROWING) and (f := tar.extractfile(m))
        )
    t0 = time.perf_counter()
    size = len(compress(raw))
    return size, len(raw), time.perf_counter() - t0


if __name__ == "__main__":
    main()
