"""The sampler's own cost beside the floor of this machine: 8 GPUs at 40 Hz with the CPU/DRAM estimate.

Run: ``.venv/bin/python -m bench.sampler [--seconds 20] [--rounds 3] [--torch]``

Printed side by side, from one run (timings are noisy on shared cores: each
round runs every phase, each phase first in turn, so a change in the machine's
load hits all of them):

- NVML calls per GPU per second: counted by a stand-in NVML under the real
  clock, and by the fake pynvml over a FakeClock (exact; target <= 45).
- bare loop: a 40 Hz Python deadline loop that reads nothing (sleep to
  absolute deadlines): what any sampler at 25 ms pays here.
- sampler: wattlog's real Sampler, NVIDIA backend and Integrator reading 8 GPUs
  through a stand-in NVML whose calls cost almost nothing (bench.standin_nvml),
  plus the CPU/DRAM estimate (psutil), with a flush thread doing what the
  agent does (a scrape snapshot every second, intervals every 10 s). Twice:
  the 8 boards publishing together (aligned), and at 8 phases 12.5 ms apart
  (staggered), as boards whose drivers keep their own timers may.
- CPU % of a core of each loop's own thread (time.thread_time), and their
  ratio (target: sampler <= 1.5 x the bare loop).
- With --torch: the sampler again beside a torch matmul loop (1 intra-op
  thread) on the main thread, for rate and lateness under load.
- With --this-machine: the agent as discovery sets it up here (on a machine
  without GPUs, RAPL or the CPU/DRAM estimate), its sampler thread's CPU.
- With --breakdown: the sampler thread's CPU as the hot path's parts are added
  one by one (no device; 8 GPUs read on every tick; the same paced, read once
  per driver publication as the agent does; the integrator; the estimate), to
  show where a core's fraction goes.

Memory flatness is then checked on a FakeClock: a simulated hour of 8 GPUs at
40 Hz, flushed every 10 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench.standin_nvml import StandInNvml
from wattlog.clock import FakeClock, SystemClock
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import ReadingSink, Sampler
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.estimate import EstimateSensor
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.telemetry.types import Reading

PERIOD_S = 0.025
GPUS = 8


def bare_loop(seconds: float) -> float:
    """A 40 Hz deadline loop reading nothing, in its own thread; its CPU as % of a core."""
    cpu: list[float] = []

    def run() -> None:
        cpu0, t0 = time.thread_time(), time.monotonic()
        k = 0
        while (deadline := t0 + k * PERIOD_S) < t0 + seconds:
            if (wait := deadline - time.monotonic()) > 0:
                time.sleep(wait)
            k += 1
        cpu.append(time.thread_time() - cpu0)

    thread = threading.Thread(target=run, name="bench-bare-loop")
    thread.start()
    thread.join()
    return 100 * cpu[0] / seconds


def sampler_phase(
    seconds: float, load: Callable[[float], object] | None = None, *, staggered: bool = False
) -> dict[str, float]:
    """The agent's sampler over 8 stand-in GPUs (publishing at 8 phases if `staggered`) and the estimate."""
    clock = SystemClock()
    nvml = StandInNvml(GPUS, staggered=staggered)
    sensors = [NvmlSensor(nvml, clock=clock), EstimateSensor()]
    devices = [d for s in sensors for d in s.devices()]
    integ = Integrator(devices, host="bench", clock=clock, period_s=PERIOD_S)
    sampler = Sampler(sensors, integ, period_s=PERIOD_S, clock=clock)
    stop = threading.Event()

    def flush() -> None:  # what the agent's flush thread and scrapes do
        k = 0
        while not stop.wait(1.0):
            integ.snapshot()
            k += 1
            if k % 10 == 0:
                integ.take_intervals()

    flusher = threading.Thread(target=flush, name="bench-flush", daemon=True)
    before = nvml.calls.copy()
    start_s = time.monotonic()
    sampler.start()
    flusher.start()
    if load is None:
        time.sleep(seconds)
    else:
        load(start_s + seconds)
    sampler.stop()  # the thread's CPU time is final once it stopped
    wall_s = time.monotonic() - start_s
    stats = sampler.stats()
    stop.set()
    flusher.join()
    integ.snapshot()  # the readings still queued are integrated, and their CPU counted
    return {
        # the sampler thread, and the integration of its readings wherever it ran (in batches,
        # on the flush thread's snapshots): the hot path's whole cost
        "cpu_pct": 100 * (stats.thread_cpu_s + integ.integration_cpu_s) / wall_s,
        "sampler_thread_pct": 100 * stats.thread_cpu_s / wall_s,
        "integration_pct": 100 * integ.integration_cpu_s / wall_s,
        "nvml_per_gpu_s": nvml.per_gpu_per_s(wall_s, before),
        "rate_hz": 1 / stats.achieved_period_s if stats.achieved_period_s else 0.0,
        "late_p99_ms": 1e3 * (stats.lateness_p99_s or 0.0),
        "overruns": float(stats.overruns_total),
        "wakes_per_s": (stats.samples_total - stats.idle_ticks_total) / wall_s,
    }


class _NullSink:
    """Takes readings and drops them (the breakdown's "no integrator" step)."""

    def add(self, reading: Reading) -> None:
        """Drop it."""

    def record_failure(self, device_uuid: str, t_s: float, reason: str, lost: bool) -> None:
        """Drop it."""


def breakdown(seconds: float) -> list[tuple[str, float]]:
    """Sampler thread CPU (% of a core) as the hot path's parts are added one by one."""
    clock = SystemClock()
    nvml = StandInNvml(GPUS)
    gpus = NvmlSensor(nvml, clock=clock)
    devices = gpus.devices()
    estimate = EstimateSensor()

    def cpu(sensors: list[Sensor], sink: ReadingSink) -> float:
        sampler = Sampler(sensors, sink, period_s=PERIOD_S, clock=clock)
        start_s = time.monotonic()
        sampler.start()
        time.sleep(seconds)
        sampler.stop()
        return 100 * sampler.stats().thread_cpu_s / (time.monotonic() - start_s)

    everything = [*devices, *estimate.devices()]
    every_tick = NvmlSensor(StandInNvml(GPUS), clock=clock, paced=False)
    every_tick.devices()
    return [
        ("bare 40 Hz loop", bare_loop(seconds)),
        ("Sampler, no device", cpu([], _NullSink())),
        ("+ 8 GPUs read on every tick", cpu([every_tick], _NullSink())),
        ("  paced: once per publication", cpu([gpus], _NullSink())),
        ("+ the Integrator", cpu([gpus], Integrator(devices, host="b", clock=clock, period_s=PERIOD_S))),
        (
            "+ the CPU/DRAM estimate",
            cpu([gpus, estimate], Integrator(everything, host="b", clock=clock, period_s=PERIOD_S)),
        ),
    ]


def this_machine(seconds: float) -> str:
    """The agent as discovery sets it up here (no GPU: RAPL or the CPU/DRAM estimate) for `seconds`."""
    with tempfile.TemporaryDirectory() as folder:
        agent = Agent(AgentConfig(port=None, host="bench", lock_dir=Path(folder) / "locks"))
        start_s = time.monotonic()
        with agent:
            time.sleep(seconds)
        stats = agent.stats()
        wall_s = time.monotonic() - start_s
    assert stats is not None
    devices = ", ".join(e.device.uuid for e in agent.snapshot())
    return (
        f"the agent on this machine ({devices}), {seconds:g} s: sampler thread "
        f"{100 * stats.thread_cpu_s / wall_s:.3f} % of a core, {stats.reads_total} reads, "
        f"{stats.samples_total} ticks of which {stats.idle_ticks_total} slept through"
    )


def nvml_calls_exact(seconds: float = 60.0) -> dict[str, float]:
    """Calls per GPU per second by function, 8 simulated GPUs at 25 ms on a FakeClock (exact counts)."""
    clock = FakeClock()
    fake = FakeNvml(simulated_gpus(GPUS, lambda i: ConstantTrace(300.0)), clock)
    sensor = NvmlSensor(fake)
    integ = Integrator(sensor.devices(), host="bench", clock=clock, period_s=PERIOD_S)
    before = dict(fake.calls)
    Sampler([sensor], integ, period_s=PERIOD_S, clock=clock).run_until(seconds)
    return {
        name: (n - before.get(name, 0)) / GPUS / seconds
        for name, n in fake.calls.items()
        if n > before.get(name, 0)
    }


def torch_matmul(end_s: float) -> None:
    """Multiply two 512 x 512 matrices until `end_s` (torch imported by main)."""
    import torch

    a, b = torch.randn(512, 512), torch.randn(512, 512)
    out = torch.empty(512, 512)
    while time.monotonic() < end_s:
        torch.mm(a, b, out=out)


def memory_over_hours(hours: float) -> str:
    """Python blocks held after 1/4, 1/2 and all of `hours` of 8-GPU sampling on a FakeClock (no sleeping)."""
    clock = FakeClock()
    sensor = SimulatedSensor(simulated_gpus(GPUS))
    integ = Integrator(sensor.devices(), host="bench", clock=clock, period_s=PERIOD_S)
    sampler = Sampler([sensor], integ, period_s=PERIOD_S, clock=clock)
    marks = []
    for part in (0.25, 0.5, 1.0):
        end_s = part * hours * 3600.0
        while (now_s := clock.monotonic()) < end_s:  # flush every 10 s as the agent does
            sampler.run_until(min(end_s, now_s + 10.0))
            clock.advance(min(end_s, now_s + 10.0) - clock.monotonic())
            integ.take_intervals()
        integ.snapshot()
        marks.append(f"{sys.getallocatedblocks():,} at {part * hours:g} h")
    return ", ".join(marks)


def main(argv: list[str] | None = None) -> int:
    """Run the phases and print the figures with their targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase (default 20)")
    parser.add_argument("--rounds", type=int, default=3, help="bare/sampler pairs, alternating (default 3)")
    parser.add_argument("--torch", action="store_true", help="add a phase beside a torch matmul loop")
    parser.add_argument("--hours", type=float, default=0.25, help="simulated hours of the memory check")
    parser.add_argument("--breakdown", action="store_true", help="add the hot path's cost part by part")
    parser.add_argument(
        "--this-machine", action="store_true", help="add the agent as discovery sets it up on this machine"
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    exact = nvml_calls_exact()
    bare: list[float] = []
    runs: list[dict[str, float]] = []
    staggered: list[dict[str, float]] = []
    phases = ["bare", "sampler", "staggered"]
    for i in range(args.rounds):
        for phase in phases[i % 3 :] + phases[: i % 3]:  # each phase first in turn
            if phase == "bare":
                bare.append(bare_loop(args.seconds))
            else:
                (runs if phase == "sampler" else staggered).append(
                    sampler_phase(args.seconds, staggered=phase == "staggered")
                )
    print(
        f"\n{GPUS} GPUs at {1 / PERIOD_S:g} Hz + CPU/DRAM estimate, {args.rounds} x {args.seconds:g} s per "
        f"phase, {os.cpu_count()} CPUs, load average before {load_before[0]:.2f} (shared cores: noisy)"
    )
    print(
        "GPUs publishing together (aligned), and at 8 phases 12.5 ms apart (staggered: each driver "
        "keeps its own timer)"
    )
    print(
        "round | bare loop CPU % | GPUs    | sampler CPU % (thread + integration) | ratio | wakes/s | "
        "NVML calls/GPU/s | rate Hz | p99 late ms"
    )
    for i, b in enumerate(bare):
        for name, r in (("aligned", runs[i]), ("stagger", staggered[i])):
            parts = f"{r['cpu_pct']:.3f} ({r['sampler_thread_pct']:.3f} + {r['integration_pct']:.3f})"
            print(
                f"{i:5d} | {b:15.3f} | {name} | {parts:>36} | {r['cpu_pct'] / b:5.2f} | "
                f"{r['wakes_per_s']:7.1f} | {r['nvml_per_gpu_s']:16.1f} | {r['rate_hz']:7.3f} | "
                f"{r['late_p99_ms']:11.2f}"
            )
    b_med = statistics.median(bare)
    for name, rows in (("aligned", runs), ("staggered", staggered)):
        s_med = statistics.median(r["cpu_pct"] for r in rows)
        print(
            f"median, {name}: bare loop {b_med:.3f} % of a core, sampler {s_med:.3f} %, "
            f"ratio {s_med / b_med:.2f} (target <= 1.5)"
        )
    calls = statistics.median(r["nvml_per_gpu_s"] for r in runs + staggered)
    print(f"NVML calls per GPU per second: {calls:.1f} live, {sum(exact.values()):.1f} exact (target <= 45)")
    print("  exact, by function: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(exact.items())))
    if args.torch:
        import torch

        torch.set_num_threads(1)
        r = sampler_phase(args.seconds, torch_matmul)
        print(
            f"beside torch matmul: sampler {r['cpu_pct']:.3f} % of a core, {r['rate_hz']:.3f} Hz, "
            f"p99 lateness {r['late_p99_ms']:.2f} ms, {r['overruns']:.0f} overruns"
        )
    if args.breakdown:
        print("sampler thread CPU as the hot path's parts are added (% of a core):")
        for name, pct in breakdown(args.seconds):
            print(f"  {name:32} {pct:.3f}")
    if args.this_machine:
        print(this_machine(args.seconds))
    print(f"Python blocks held over {args.hours:g} simulated h (FakeClock): {memory_over_hours(args.hours)}")
    print(f"load average after {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
