"""What band revisions cost `energy_by_hour`: a day of 8 GPUs' 10 s rows, with and without revisions.

Run: ``.venv/bin/python -m bench.revised_hours [--revisions 5]``

Two runs of the same 69,120 rows in one SQLite ledger; the second has `--revisions`
revisions per GPU (spans from the device's first row, as the agent makes them). Each
hour's band adds its share of them when read (ledger.revisions.hourly_shares); the
bench prints the best of three reads of each run and the ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.records import BandRevision, EnergyInterval, Kind, Source

T0 = 1_800_000_000.0
GPUS = 8
ROWS = 8640  # a day of 10 s flushes


def _fill(ledger: Ledger, name: str, revisions: int) -> None:
    run = ledger.start_run(name).id
    for chunk in range(0, ROWS, 720):
        rows = [
            EnergyInterval.of(
                "h", f"gpu{g}", Kind.GPU, Source.COUNTER, T0 + 10 * k, T0 + 10 * k + 10, 4e3, 3.6e3, 4.4e3
            )
            for g in range(GPUS)
            for k in range(chunk, chunk + 720)
        ]
        ledger.record_intervals(run, rows)
    ends = [ROWS * (i + 1) // revisions for i in range(revisions)]
    ledger.record_revisions(
        run,
        [
            BandRevision("h", f"gpu{g}", T0, T0 + 10 * e, "bench", (100.0, -50.0, 0.0, 0.0, 0.0, 0.0))
            for g in range(GPUS)
            for e in ends
        ],
    )


def _best_s(ledger: Ledger, name: str) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        ledger.energy_by_hour(name)
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    """Fill both runs and print the reads' times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=5, help="revisions per GPU (default 5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger(make_engine(f"sqlite:///{Path(folder) / 'ledger.db'}"))
        _fill(ledger, "plain", 0)
        _fill(ledger, "revised", args.revisions)
        plain_s, revised_s = _best_s(ledger, "plain"), _best_s(ledger, "revised")
        ledger.engine.dispose()
    print(
        f"energy_by_hour of {GPUS} GPUs x {ROWS} rows (24 hours): {plain_s * 1e3:.0f} ms without revisions, "
        f"{revised_s * 1e3:.0f} ms with {args.revisions} per GPU ({revised_s / plain_s:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
