"""Irregular loads for bench.accuracy: MoE-like lognormal steps, bursty inference, checkpoint dips.

Each is a seeded PiecewiseTrace with an exact integral, like the training traces:

- MoE-like: step lengths drawn lognormal (median 600 ms, sigma 0.6: some 150 ms, some 3 s) and
  each step's compute power lognormal too (experts routed unevenly: ~420-700 W), then a
  communication phase at 350 W of a fifth of the step.
- bursty inference: requests arrive as a Poisson process (mean gap 300 ms); each is served at
  600-690 W for 40-400 ms; between them the GPU idles at 120 W.
- checkpoint dips: training steps of 0.8-1.2 s with a 4 s dip to 150 W every 30 s (the
  checkpoint written while the GPU waits).
"""

from __future__ import annotations

import random

from wattlog.telemetry.sensors.traces import PiecewiseTrace, TrainingTrace


def moe_steps(seed: int, duration_s: float) -> PiecewiseTrace:
    """MoE-like training: lognormal step lengths and per-step compute power."""
    rng = random.Random(seed)
    starts: list[float] = []
    powers: list[float] = []
    t = 0.0
    while t < duration_s:
        step_s = min(max(rng.lognormvariate(-0.51, 0.6), 0.05), 5.0)  # median e^-0.51 = 0.6 s
        compute_w = min(max(560.0 * rng.lognormvariate(0.0, 0.12), 300.0), 700.0)
        starts += [t, t + 0.8 * step_s]
        powers += [compute_w, 350.0]
        t += step_s
    return PiecewiseTrace(starts, powers, t, repeats=True)


def bursty_inference(seed: int, duration_s: float) -> PiecewiseTrace:
    """Inference serving: Poisson request bursts over an idle floor."""
    rng = random.Random(seed)
    starts: list[float] = [0.0]
    powers: list[float] = [120.0]
    t = rng.expovariate(1 / 0.3)
    while t < duration_s:
        busy_s = rng.uniform(0.04, 0.4)
        starts += [t, t + busy_s]
        powers += [rng.uniform(600.0, 690.0), 120.0]
        t += busy_s + max(rng.expovariate(1 / 0.3), 1e-3)
    return PiecewiseTrace(starts, powers, t, repeats=True)


def checkpoint_dips(seed: int, duration_s: float) -> TrainingTrace:
    """Training with a 4 s dip to 150 W every 30 s."""
    return TrainingTrace.generate(
        seed=seed,
        duration_s=duration_s,
        step_s=(0.8, 1.2),
        vary="step",
        checkpoint_every_s=30.0,
        checkpoint_s=4.0,
        checkpoint_w=150.0,
        warmup_s=3.0,
    )


IRREGULAR = {"MoE-like lognormal steps": moe_steps, "bursty inference": bursty_inference}
"""Name -> generator (seed, duration_s) of the irregular traces (checkpoint dips: TrainingTrace)."""
