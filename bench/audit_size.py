"""How big an audit bundle is per GPU-hour, and what a 1,024-GPU month would weigh.

Run: ``.venv/bin/python -m bench.audit_size [--gpus 8] [--hours 2] [--flush-s 10]``

Builds a run of GPUS GPU rows flushed every FLUSH_S seconds (10 s: the agent's default;
1 s: a 1 Hz series) over HOURS in a temporary SQLite ledger, bundles it with
`wattlog.accounting.audit.build_bundle` (rows, power and counter series, intensity,
profiles, exports), and prints the compressed size per GPU-hour and scaled to 1,024 GPUs x
720 h (the files that grow with the run scaled, the fixed ones once), against the 1 GB target.
Twice: with whole-watt rows (700-796 W in a repeating pattern, which compression flatters) and
with every float digit a real row carries (an integrator's split at a flush edge): the second is
what a real run's bundle weighs.
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
    """Print the bundle's size per GPU-hour and for a 1,024-GPU month: whole-watt rows, then float ones."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--flush-s", type=float, default=10.0, help="row length: 10 (default), 1 (1 Hz)")
    args = parser.parse_args()
    for float_energies in (False, True):
        size, growing = bundle_bytes(args.gpus, args.hours, args.flush_s, float_energies)
        per, fixed = growing / (args.gpus * args.hours), size - growing
        what = (
            "joules with every float digit (as the agent's integrator leaves them)"
            if float_energies
            else ("whole-watt rows (a repeating pattern: compression flatters them)")
        )
        print(f"{args.gpus} GPUs x {args.hours:g} h, rows every {args.flush_s:g} s, {what}:")
        print(
            f"  bundle {size / 1e6:.3f} MB; fixed part {fixed / 1e3:.1f} kB; per GPU-hour {per / 1e3:.2f} kB"
        )
        month_gb = (per * 737_280 + fixed) / 1e9
        verdict = "met" if month_gb < TARGET_GB else "NOT met"
        print(
            f"  a 1,024-GPU month (737,280 GPU-h): {month_gb:.3f} GB; target < {TARGET_GB:g} GB: {verdict} "
            f"({month_gb / TARGET_GB:.2f}x the target)"
        )


def bundle_bytes(gpus: int, hours: float, flush_s: float, float_energies: bool) -> tuple[int, int]:
    """The bundle's compressed size and the part that grows with the run, for one run of `gpus` GPU rows."""
    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger(make_engine(f"sqlite:///{folder}/l.db"), clock=FakeClock(wall_offset_s=T0))
        run = ledger.start_run("bench", RunSpec(site="jupiter"))
        steps = int(hours * 3600 / flush_s)
        for k in range(steps):
            start = T0 + k * flush_s
            rows = []
            for g in range(gpus):  # 700-796 W, each GPU and row its own
                joules = (700.0 + (k * 7919 + g * 31) % 97) * flush_s
                if float_energies:  # a reading split at the flush edge leaves 16-17 digits
                    joules *= 1.0 + ((k * 104_729 + g * 7_919) % 1_000_003) / 1e9
                span = (start, start + flush_s, joules, joules * 0.95, joules * 1.05)
                rows.append(EnergyInterval.of("n0", f"GPU-{g:04d}", Kind.GPU, Source.COUNTER, *span))
            ledger.record_intervals(run.id, rows)
        ledger.end_run(run.id, end_s=T0 + steps * flush_s)
        out = build_bundle(ledger, "bench", TableOptions(catalog=site_catalog()), Path(folder) / "b.tar.gz")
        return out.stat().st_size, _growing_bytes(out)


def _growing_bytes(bundle: Path) -> int:
    """Compressed bytes of the files that grow with the run (rows, series, gaps, events), each alone."""
    with tarfile.open(bundle) as tar:
        blobs = {m.name: tar.extractfile(m) for m in tar.getmembers()}
        return sum(len(gzip.compress(f.read())) for n, f in blobs.items() if n in GROWING and f is not None)


if __name__ == "__main__":
    main()
