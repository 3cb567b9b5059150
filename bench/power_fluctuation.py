"""Power fluctuation found on a simulated training trace with checkpoint stalls (prints figures, no timing).

    .venv/bin/python bench/power_fluctuation.py [--gpus 64] [--seconds 1800] [--period 1]

Writes one run of N synchronised simulated H100s (TrainingTrace: steps of 0.47 s, 80 %
compute at 650 W and 20 % communication at 350 W, a 5 s checkpoint at 100 W every 60 s) into a
temporary ledger at `--period` s per row, then prints `wattlog table RUN --power`
and the true figures of the trace beside what was found.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.power_report import run_power
from wattlog.cli import main as wattlog
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.sensors.traces import TrainingTrace

CHECKPOINT_W = 100.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=1800.0)
    parser.add_argument("--period", type=float, default=1.0, help="seconds per ledger row")
    parser.add_argument("--step", type=float, default=0.47, help="training step length, s")
    args = parser.parse_args()
    trace = TrainingTrace.generate(
        seed=7, duration_s=args.seconds, step_s=(args.step, args.step), compute_w=650.0, comm_w=350.0,
        comm_fraction=0.2, checkpoint_every_s=60.0, checkpoint_s=5.0, checkpoint_w=CHECKPOINT_W,
        jitter=0.0, power_jitter=0.0,
    )  # fmt: skip
    stalls = sum(1 for _, p in trace.segments if p == CHECKPOINT_W)
    url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'power.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("simulated-training", RunSpec(site="jupiter", device_model="H100"))
    t0, steps = 1_767_225_600.0, int(args.seconds / args.period)
    for i in range(steps):
        a, b = i * args.period, (i + 1) * args.period
        e = trace.energy_j(a, b)
        rows = [
            EnergyInterval.of(
                f"node{g // 8}", f"GPU-{g}", Kind.GPU, Source.SIMULATED, t0 + a, t0 + b, e, e, e
            )
            for g in range(args.gpus)
        ]
        ledger.record_intervals(run.id, rows)  # type: ignore[arg-type]
    ledger.end_run(run.id)  # type: ignore[arg-type]
    wattlog(["table", "simulated-training", "--db", url, "--power"])
    figures, _ = run_power(ledger, ledger.get_run("simulated-training"))
    assert figures is not None
    training_w = 0.8 * 650 + 0.2 * 350
    true_depth = 1 - CHECKPOINT_W / training_w
    depths = [d.depth for d in figures.dips]
    print(f"true: {stalls} checkpoint stalls, depth {true_depth:.1%} (100 W vs {training_w:.0f} W per GPU)")
    print(
        f"found: {len(figures.dips)} dips, depth {min(depths):.1%} - {max(depths):.1%} "
        f"(worst error {max(abs(d - true_depth) / true_depth for d in depths):.2%} of the true depth); "
        f"swing {figures.swing_w / 1e6:.4f} MW (true {args.gpus * (training_w - CHECKPOINT_W) / 1e6:.4f}), "
        f"ramp {figures.ramp_w_per_s / 1e6:.4f} MW/s at {figures.resolution_s:g} s resolution"
    )


if __name__ == "__main__":
    main()
