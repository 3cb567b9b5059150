"""How big an audit bundle is per GPU-hour, and what a 1,024-GPU month would weigh.

Run: ``.venv/bin/python -m bench.audit_size [--gpus 8] [--hours 2] [--flush-s 10]``

Builds a run of GPUS GPU rows flushed every FLUSH_S seconds (10 s: the agent's default;
1 s: a 1 Hz series) over HOURS in a temporary SQLite ledger, bundles it with
`wattlog.accounting.audit.build_bundle` (rows, power series, intensity, profiles, exports), and
prints the compressed size per GPU-hour and scaled to 1,024 GPUs x 720 h (the files that grow
with the run scaled, the fixed ones once), against the 1 GB target: gzip (the bundle's former
compression, the baseline) and xz (lzma, what a .tar.xz bundle uses), each with its compression
speed. Three times: with whole-watt rows (700-796 W in a repeating pattern, which compression
flatters), with every float digit a real row carries (an integrator's split at a flush edge: what
a real run's bundle weighs), and with those rows folded hourly by `wattlog compact`; then a month
whose last 7 days are raw and the rest folded. The rows are coded losslessly (accounting.audit_rows):
a raw row's energy keeps every digit of its double, ~5.4 B after xz, so a month of raw 10 s rows
cannot reach 1 GB without dropping digits the exports print. The series are at the rows'
resolution (the ledger keeps a row per flush, 10 s by default): a 1 Hz bundle is what
`--flush-s 1` measures, or ~10x the 10 s figure.
"""

from __future__ import annotations

import argparse
import gzip
import lzma
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from wattlog.accounting.audit import build_bundle
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.run_table import TableOptions
from wattlog.accounting.sites import site_catalog
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Kind, Source

T0 = 1_800_000_000.0
TARGET_GB = 1.0
MONTH_GPU_H = 737_280  # 1,024 GPUs x 720 h
MONTH_DAYS, RAW_DAYS = 30, 7
CASES = {
    "whole": "whole-watt rows (a repeating pattern: compression flatters them)",
    "float": "joules with every float digit (a real run's rows)",
    "folded": "the same folded hourly (`wattlog compact`)",
}
GROWING = ("rows/", "series.json", "gaps.json", "events.json")
"""The members that grow with the run (rows/: the rows, one file per column, accounting.audit_rows)."""


def main() -> None:
    """Print the bundle's size per GPU-hour and for a 1,024-GPU month: whole-watt rows, float ones, and
    float ones folded hourly; then a month whose last 7 days are raw and the rest folded."""
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
    (raw_per, fixed), (folded_per, _) = per_gpu_hour["float", "xz"], per_gpu_hour["folded", "xz"]
    kept = (raw_per * RAW_DAYS + folded_per * (MONTH_DAYS - RAW_DAYS)) / MONTH_DAYS * MONTH_GPU_H + fixed
    print(
        f"a 1,024-GPU month with its last {RAW_DAYS} days raw, the rest folded hourly (`wattlog compact "
        f"--older-than-days {RAW_DAYS}`), xz: {kept / 1e9:.3f} GB: {_verdict(kept / 1e9)}"
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
        for k in range(steps):
            start, end = _edge(k, args.flush_s, case), _edge(k + 1, args.flush_s, case)
            rows = []
            for g in range(args.gpus):  # 700-796 W, each GPU and row its own
                joules = (700.0 + (k * 7919 + g * 31) % 97) * args.flush_s
                if case != "whole":  # a reading split at the flush edge leaves 16-17 digits
                    joules *= 1.0 + ((k * 104_729 + g * 7_919) % 1_000_003) / 1e9
                span = (start, end, joules, joules * 0.95, joules * 1.05)
                rows.append(EnergyInterval.of("n0", f"GPU-{g:04d}", Kind.GPU, Source.COUNTER, *span))
            ledger.record_intervals(run.id, rows)
        ledger.end_run(run.id, end_s=T0 + steps * args.flush_s)
        if case == "folded":
            ledger.compact_hourly(0, now_s=T0 + steps * args.flush_s + 3600)
        options = TableOptions(catalog=site_catalog())
        sizes = {}
        for name, out in (("gzip", "b.tar.gz"), ("xz", "b.tar.xz")):
            bundle = build_bundle(ledger, "bench", options, Path(folder) / out)
            sizes[name] = (bundle.stat().st_size, _growing(bundle))
        return sizes


def _edge(k: int, flush_s: float, case: str) -> float:
    """The k-th flush edge of the host's devices: on the clock's whole seconds for whole-watt rows, else
    late by 0-40 ms (an agent's flush thread wakes when the scheduler lets it: every digit of a double)."""
    late_s = 0.0 if case == "whole" or k == 0 else ((k * 7_919) % 40_009) / 1e6
    return T0 + k * flush_s + late_s


def _growing(bundle: Path) -> tuple[int, int, float]:
    """The files that grow with the run (rows, series, gaps, events), compressed each alone as the
    bundle compresses: their bytes, their raw bytes, and the seconds compressing took."""
    compress: Callable[[bytes], bytes] = gzip.compress if bundle.name.endswith(".gz") else lzma.compress
    with tarfile.open(bundle) as tar:
        raw = [f.read() for m in tar.getmembers() if m.name.startswith(GROWING) and (f := tar.extractfile(m))]
    t0 = time.perf_counter()
    size = sum(len(compress(blob)) for blob in raw)
    return size, sum(len(blob) for blob in raw), time.perf_counter() - t0


if __name__ == "__main__":
    main()
