"""How big an audit bundle is per GPU-hour, and what a 1,024-GPU month would weigh.

Run: ``.venv/bin/python -m bench.audit_size [--gpus 8] [--hours 2] [--flush-s 10]``

Builds a run of GPUS GPU rows flushed every FLUSH_S seconds (10 s: the agent's default;
1 s: a 1 Hz series) over HOURS in a temporary SQLite ledger, bundles it with
`wattlog.accounting.audit.build_bundle` (rows, power and counter series, intensity,
profiles, exports), and prints the compressed size per GPU-hour and scaled to 1,024 GPUs x
720 h, against the 1 GB target. Power varies row to row (compression must not flatter it).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from wattlog.accounting.audit import build_bundle
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.run_table import TableOptions
from wattlog.accounting.sites import site_catalog
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Kind, Source

T0 = 1_800_000_000.0
TARGET_GB = 1.0


def main() -> None:
    """Print the bundle's size per GPU-hour and for a 1,024-GPU month."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--flush-s", type=float, default=10.0, help="row length: 10 (default), 1 (1 Hz)")
    args = parser.parse_args()
    flush_s = args.flush_s
    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger(make_engine(f"sqlite:///{folder}/l.db"), clock=FakeClock(wall_offset_s=T0))
        run = ledger.start_run("bench", RunSpec(site="jupiter"))
        steps = int(args.hours * 3600 / flush_s)
        for k in range(steps):
            start = T0 + k * flush_s
            joules = (700.0 + (k * 7919) % 97) * flush_s  # 700-796 W, not all equal: no flattering
            span = (start, start + flush_s, joules, joules * 0.95, joules * 1.05)
            rows = [
                EnergyInterval.of("n0", f"GPU-{g:04d}", Kind.GPU, Source.COUNTER, *span)
                for g in range(args.gpus)
            ]
            ledger.record_intervals(run.id, rows)
        ledger.end_run(run.id, end_s=T0 + steps * flush_s)
        out = build_bundle(ledger, "bench", TableOptions(catalog=site_catalog()), Path(folder) / "b.tar.gz")
        size = out.stat().st_size
    gpu_hours = args.gpus * args.hours
    per = size / gpu_hours
    print(f"{args.gpus} GPUs x {args.hours:g} h, rows every {flush_s:g} s: bundle {size / 1e6:.2f} MB")
    month_gb = per * 737_280 / 1e9
    print(f"per GPU-hour: {per / 1e3:.2f} kB; a 1,024-GPU month (737,280 GPU-h): {month_gb:.3f} GB")
    verdict = "met" if month_gb < TARGET_GB else "NOT met"
    print(f"target < {TARGET_GB:g} GB: {verdict} ({month_gb / TARGET_GB:.2f}x the target)")


if __name__ == "__main__":
    main()
