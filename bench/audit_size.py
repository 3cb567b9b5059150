"""How big an audit bundle is per GPU-hour, and what a 1,024-GPU month would weigh.

Run: ``.venv/bin/python -m bench.audit_size [--gpus 8] [--hours 2] [--flush-s 10]``

Builds a run of GPUS GPU rows flushed every FLUSH_S seconds (10 s: the agent's default;
1 s: a 1 Hz series) over HOURS in a temporary SQLite ledger, bundles it with
`wattlog.accounting.audit.build_bundle` (rows, power and counter series, intensity,
profiles, exports), and prints the compressed size per GPU-hour and scaled to 1,024 GPUs x
720 h (the files that grow with the run scaled, the fixed ones once), against the 1 GB target.
Power varies row to row and GPU to GPU (compression must not flatter it).
"""

from __future__ import annotations

import argparse
import gzip
import tarfile
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
GROWING = ("rows.json", "series.json", "gaps.json", "events.json")


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
            rows = []
            for g in range(args.gpus):  # 700-796 W, each GPU and row its own: compression must not flatter
                joules = (700.0 + (k * 7919 + g * 31) % 97) * flush_s
                span = (start, start + flush_s, joules, joules * 0.95, joules * 1.05)
                rows.append(EnergyInterval.of("n0", f"GPU-{g:04d}", Kind.GPU, Source.COUNTER, *span))
            ledger.record_intervals(run.id, rows)
        ledger.end_run(run.id, end_s=T0 + steps * flush_s)
        out = build_bundle(ledger, "bench", TableOptions(catalog=site_catalog()), Path(folder) / "b.tar.gz")
        size = out.stat().st_size
        growing = _growing_bytes(out)
    gpu_hours = args.gpus * args.hours
    per = growing / gpu_hours
    fixed = size - growing
    print(f"{args.gpus} GPUs x {args.hours:g} h, rows every {flush_s:g} s: bundle {size / 1e6:.3f} MB")
    print(f"fixed part (profiles, site, exports...): {fixed / 1e3:.1f} kB; per GPU-hour: {per / 1e3:.2f} kB")
    month_gb = (per * 737_280 + fixed) / 1e9
    print(f"a 1,024-GPU month (737,280 GPU-h): {month_gb:.3f} GB")
    verdict = "met" if month_gb < TARGET_GB else "NOT met"
    print(f"target < {TARGET_GB:g} GB: {verdict} ({month_gb / TARGET_GB:.2f}x the target)")


def _growing_bytes(bundle: Path) -> int:
    """Compressed bytes of the files that grow with the run (rows, series, gaps, events), each alone."""
    with tarfile.open(bundle) as tar:
        blobs = {m.name: tar.extractfile(m) for m in tar.getmembers()}
        return sum(len(gzip.compress(f.read())) for n, f in blobs.items() if n in GROWING and f is not None)


if __name__ == "__main__":
    main()
