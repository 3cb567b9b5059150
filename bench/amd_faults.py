"""AMD's sensor as its driver behaves, on the amdsmi stand-in: calls, a stale counter, a counter's scale.

Run: ``.venv/bin/python -m bench.amd_faults``

Two simulated MI300X replay seeded training-like traces through the stand-in
(`telemetry/sensors/fake_amdsmi.py`: a timestamp new at every read, a float32
resolution), read by the real Sampler (25 ms) and Integrator on a FakeClock:

- amdsmi calls per GPU per second over 60 s (target <= 15);
- the energy error against the exact integral when the accumulator holds for 5 s
  (from 20 s) and then catches up, over runs of 90 s and 45 s, with the notes;
- a counter 0.27 % off power x time (15.3 uJ taken for the float32 15.259), under a
  steady load and a training-like one: the device's notes and its band.
Simulated time: a few seconds of CPU.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from wattlog.clock import FakeClock
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.amdsmi_sensor import AmdSmiSensor
from wattlog.telemetry.sensors.fake_amdsmi import (
    COUNTER_RESOLUTION_UJ,
    ROCM_SMI_RESOLUTION_UJ,
    AmdFaults,
    FakeAmdSmi,
)
from wattlog.telemetry.sensors.simulated import SimulatedGpu
from wattlog.telemetry.sensors.traces import ConstantTrace, TrainingTrace
from wattlog.telemetry.types import DeviceEnergy, Vendor

PERIOD_S = 0.025
START_S = 1.0  # the start-up check's second


@dataclass(frozen=True, slots=True)
class Outcome:
    """One run: each GPU's energy against the truth, and the calls it cost."""

    errors: list[float]
    energies: list[DeviceEnergy]
    calls_per_gpu_s: float


def run(
    seconds: float, faults: AmdFaults | None = None, seed: int = 1, watts: float | None = None
) -> Outcome:
    """Two MI300X for `seconds` after the start-up check; their errors against the exact integral.

    `watts`: a constant load instead of the seeded training-like traces.
    """
    clock = FakeClock()
    gpus = [
        SimulatedGpu(
            f"GPU-mi300x-{i}",
            "AMD Instinct MI300X",
            ConstantTrace(watts)
            if watts is not None
            else TrainingTrace.generate(seed=seed + i, duration_s=600.0),
            power_limit_w=750.0,
            vendor=Vendor.AMD,
        )
        for i in range(2)
    ]
    smi = FakeAmdSmi(gpus, clock, faults)
    sensor = AmdSmiSensor(smi, clock=clock)
    integ = Integrator(sensor.devices(), host="bench", clock=clock, period_s=PERIOD_S)
    smi.calls.clear()
    t0 = clock.monotonic()
    sampler = Sampler([sensor], integ, period_s=PERIOD_S, clock=clock)
    for k in range(1, math.ceil(seconds / 10.0) + 1):  # flushed every 10 s, as the agent does
        sampler.run_until(t0 + min(10.0 * k, seconds))
        integ.take_intervals()
    clock.advance(max(t0 + seconds - clock.monotonic(), 0.0))
    t1 = clock.monotonic()
    calls = smi.calls_per_gpu_per_s(t1 - t0)
    integ.finish(t1)
    energies = integ.snapshot()
    errors = [e.energy_j / gpu.true_energy_j(t0, t1) - 1 for e, gpu in zip(energies, gpus, strict=True)]
    return Outcome(errors, energies, calls)


def main(argv: list[str] | None = None) -> int:
    """Print the three measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    clean = run(60.0, seed=args.seed)
    print(f"amdsmi calls per GPU per second at 25 ms: {clean.calls_per_gpu_s:.2f} (target <= 15)")
    print("clean run, 60 s: " + ", ".join(f"{e:+.3%}" for e in clean.errors))
    for seconds in (90.0, 45.0):
        stale = run(seconds, AmdFaults(stale_from_s=START_S + 20.0, stale_s=5.0), seed=args.seed)
        print(f"counter stuck 5 s in a {seconds:g} s run: " + ", ".join(f"{e:+.3%}" for e in stale.errors))
        for note in stale.energies[0].notes:
            print(f"    note: {note}")
    scale = ROCM_SMI_RESOLUTION_UJ / COUNTER_RESOLUTION_UJ
    for load, watts in (("a steady 500 W", 500.0), ("training-like", None)):
        off = run(180.0, AmdFaults(counter_scale=scale), seed=args.seed, watts=watts)
        e = off.energies[0]
        print(f"counter {scale - 1:+.3%} off power x time, {load} load, 180 s: error {off.errors[0]:+.3%}")
        print(f"    band {e.low_j / e.energy_j - 1:+.3%} .. {e.high_j / e.energy_j - 1:+.3%}")
        for note in e.notes:
            print(f"    note: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
