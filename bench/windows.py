"""Window edges: the counter energy of 20 windows of 10-90 s against the exact integral, on a FakeClock.

Run: ``.venv/bin/python -m bench.windows [--windows 20] [--seed 7]``

A simulated H100 whose counter integrates true power (updated every 100 ms,
its grid at a random phase) replays a seeded training-like trace; the real
Sampler (25 ms) and Integrator read it and ``telemetry.windows.Windows`` opens
and closes windows of 10-90 s at random times (not on the sampler's grid).
Each window's energy is compared with gain x the exact integral over the same
edges (what a perfect reading of this board gives): every window must lie
within one counter update of it (P_max x 100 ms), and the mean absolute error
over the windows is printed against the target (<= 0.02 %). Beside it: the
provisional figure (each edge's tail from the latest power, before the
counter's next update is read) and the counter differenced at its last update
before each edge (Zeus' window API on this device).
Simulated time: 20 windows take about a second.

``--fallback`` reads the same GPU through the NVIDIA backend over the fake
pynvml with every field timestamp 0 (older drivers and bindings): the path
that keeps only changed counter values and paces reads by the counter's
observed updates. It prints how many windows resolved and the NVML calls per
GPU per second (target <= 45).

``--amd`` reads it as an MI300X through the AMD backend over the amdsmi stand-in
(a timestamp new at every read: the counter paced by its changes, power at the
slow rate). It prints the same, with the amdsmi calls per GPU per second
(target <= 15).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import dataclass

from wattlog.clock import FakeClock
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.amdsmi_sensor import AmdSmiSensor
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.fake_amdsmi import FakeAmdSmi
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.sensors.simulated import SensorModel, SimulatedGpu, SimulatedSensor
from wattlog.telemetry.sensors.traces import TrainingTrace
from wattlog.telemetry.types import Vendor
from wattlog.telemetry.windows import Windows

PERIOD_S = 0.025


@dataclass(frozen=True, slots=True)
class WindowError:
    """One window: its length and the relative errors of the edge-corrected and plain counter figures."""

    seconds: float
    rel: float
    counter_only_rel: float
    within_update: bool
    provisional_rel: float
    resolved: bool = True


@dataclass(frozen=True, slots=True)
class Run:
    """The windows of one run, and the NVML calls per second it cost (None: not read through NVML)."""

    windows: list[WindowError]
    calls_per_s: float | None


def run(windows: int = 20, seed: int = 7, *, fallback: bool = False, amd: bool = False) -> Run:
    """Open and close `windows` windows of 10-90 s over a training-like trace; their errors.

    `fallback` reads the GPU through the NVIDIA backend without field timestamps; `amd`
    through the AMD backend over the amdsmi stand-in.
    """
    rng = random.Random(seed)
    clock = FakeClock()
    trace = TrainingTrace.generate(seed=seed, duration_s=600.0, step_s=(0.3, 1.5), vary="step")
    model = SensorModel.h100().with_gain(0.97).with_phase(rng.random() / 10)
    vendor = Vendor.AMD if amd else Vendor.NVIDIA
    gpu = SimulatedGpu(
        "GPU-window", "AMD Instinct MI300X" if amd else "H100 (simulated)", trace, model, vendor=vendor
    )
    fake: FakeNvml | FakeAmdSmi | None = None
    sensor: Sensor = SimulatedSensor([gpu])
    if fallback:
        fake = FakeNvml([gpu], clock, field_timestamps=False)
        sensor = NvmlSensor(fake)
    elif amd:
        fake = FakeAmdSmi([gpu], clock)
        sensor = AmdSmiSensor(fake, clock=clock, check_s=0)
    integ = Integrator(sensor.devices(), host="bench", clock=clock, period_s=PERIOD_S)
    sampler = Sampler([sensor], integ, period_s=PERIOD_S, clock=clock)
    spans = Windows(integ, clock, "bench")
    opened = []
    sampler.run_until(5.0 + rng.random())
    for _ in range(windows):
        seconds = rng.uniform(10.0, 90.0)
        # the window opens between two ticks, as a training loop's would
        clock.advance(rng.random() * PERIOD_S)
        t0 = clock.monotonic()
        window = spans.begin("w")
        c0 = gpu.energy_mj(t0) / 1e3
        while clock.monotonic() < t0 + seconds - 10.0:  # flush every 10 s, as the agent does
            sampler.run_until(clock.monotonic() + 10.0)
            spans.take()
        sampler.run_until(t0 + seconds)
        clock.advance(max(t0 + seconds - clock.monotonic(), 0.0))
        t1 = clock.monotonic()
        spans.end(window)
        provisional_j = window.energy_j  # before the counter's next update: edges from the latest power
        opened.append((window, t0, t1, c0, gpu.energy_mj(t1) / 1e3, provisional_j))
        sampler.run_until(clock.monotonic() + rng.uniform(0.5, 5.0))
    out: list[WindowError] = []
    for window, t0, t1, c0, c1, provisional_j in opened:
        truth_j = model.gain * gpu.true_energy_j(t0, t1)
        update_j = gpu.power_limit_w * model.counter_update_s
        out.append(
            WindowError(
                t1 - t0,
                window.energy_j / truth_j - 1,
                (c1 - c0) / truth_j - 1,
                abs(window.energy_j - truth_j) <= update_j,
                provisional_j / truth_j - 1,
                window.resolved,  # the update after each edge has been read since
            )
        )
    calls = sum(fake.calls.values()) / clock.monotonic() if fake is not None else None
    return Run(out, calls)


def main(argv: list[str] | None = None) -> int:
    """Print each window's error, the MAE and the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fallback", action="store_true", help="NVML without field timestamps")
    parser.add_argument("--amd", action="store_true", help="an MI300X through the amdsmi stand-in")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = run(args.windows, args.seed, fallback=args.fallback, amd=args.amd)
    errors = result.windows
    head = ("window s", "edges, resolved", "edges, provisional", "counter at last update (Zeus-like)")
    print(" | ".join(head))
    for e in errors:
        print(f"{e.seconds:8.1f} | {e.rel:+15.4%} | {e.provisional_rel:+18.4%} | {e.counter_only_rel:+34.4%}")
    mae = statistics.fmean(abs(e.rel) for e in errors)
    mae_provisional = statistics.fmean(abs(e.provisional_rel) for e in errors)
    mae_plain = statistics.fmean(abs(e.counter_only_rel) for e in errors)
    print(
        f"\nMAE over {len(errors)} windows of 10-90 s: {mae:.4%} with the edges resolved "
        f"(target <= 0.02 %); {mae_provisional:.4%} provisional (the latest power, before the "
        f"next update); {mae_plain:.4%} for the counter at its last update"
    )
    print(f"within one counter update: {sum(e.within_update for e in errors)}/{len(errors)} windows")
    print(f"resolved: {sum(e.resolved for e in errors)}/{len(errors)} windows")
    if result.calls_per_s is not None:
        api, target = ("amdsmi", 15) if args.amd else ("NVML", 45)
        print(f"{api} calls per GPU per second: {result.calls_per_s:.1f} (target <= {target})")
    print(f"simulated on a FakeClock in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
