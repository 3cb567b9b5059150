"""The sampler's own cost: 8 simulated GPUs at 40 Hz, idle and beside a CPU-bound training loop.

Run: ``.venv/bin/python -m bench.sampler [--seconds 60] [--python-load]``

Real clock, real background thread, the real Integrator behind it, and a
flush thread doing what the agent does (a scrape snapshot every second,
intervals every 10 s). Phases:

- idle:         the main thread sleeps.
- idle, null sensor: the same with reads that cost nothing (the simulator's own
                cost of ~7 us a read taken out: what remains is ours).
- torch matmul: the main thread multiplies 512 x 512 matrices in a loop (one
                intra-op thread), as a training step does; torch releases the GIL.
- python loop:  (with --python-load) pure-Python arithmetic that holds the GIL,
                the worst case for an in-process sampler.

Printed per phase: achieved rate against 40 Hz, lateness p50/p99/max, the
sampler thread's CPU time as % of one core (time.thread_time in the thread),
overruns, and the growth between the middle and the end of the process RSS and
of Python's allocated blocks (torch's own allocator moves the RSS of its phase;
the lock-detection buffer of 256 distinct published values per device may still
be filling after a minute). Flatness over hours is then checked on a FakeClock:
a simulated hour of 8 GPUs at 40 Hz, flushed every 10 s, in seconds of CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable

import psutil

from wattlog.clock import FakeClock, SystemClock
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.types import DeviceInfo, Reading

PERIOD_S = 0.025
GPUS = 8

Load = Callable[[float], int]


def idle(end_s: float) -> int:
    """Sleep until `end_s` (monotonic); no work."""
    time.sleep(max(0.0, end_s - time.monotonic()))
    return 0


def torch_matmul(end_s: float) -> int:
    """Multiply two 512 x 512 matrices until `end_s`; returns the steps done (torch imported by main)."""
    import torch

    a, b = torch.randn(512, 512), torch.randn(512, 512)
    out = torch.empty(512, 512)
    steps = 0
    while time.monotonic() < end_s:
        torch.mm(a, b, out=out)
        steps += 1
    return steps


def python_loop(end_s: float) -> int:
    """Pure-Python arithmetic holding the GIL until `end_s`; returns the steps done."""
    steps = 0
    while time.monotonic() < end_s:
        x = 0
        for i in range(10_000):
            x += i * i
        steps += 1
    return steps


class NullSensor:
    """8 devices whose reads cost nothing: what is left is the sampler's and integrator's own cost."""

    def __init__(self, devices: list[DeviceInfo]) -> None:
        self._devices = devices

    def devices(self) -> list[DeviceInfo]:
        """The devices."""
        return self._devices

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """A constant reading."""
        return Reading(device.uuid, t_s, energy_mj=1e3 * 300.0 * t_s, power_w=300.0)

    def close(self) -> None:
        """Nothing to release."""


def run_phase(name: str, load: Load, seconds: float, *, null: bool = False) -> dict[str, str]:
    """Sample 8 GPUs for `seconds` beside `load`; the row of figures."""
    clock = SystemClock()
    proc = psutil.Process(os.getpid())
    sensor: Sensor = SimulatedSensor(simulated_gpus(GPUS, t0_s=clock.monotonic()))
    if null:
        sensor = NullSensor(sensor.devices())
    integ = Integrator(sensor.devices(), host="bench", clock=clock, period_s=PERIOD_S)
    sampler = Sampler([sensor], integ, period_s=PERIOD_S, clock=clock)
    stop = threading.Event()

    def flush() -> None:  # what the agent's flush thread and scrapes do
        k = 0
        while not stop.wait(1.0):
            integ.snapshot()
            k += 1
            if k % 10 == 0:
                integ.take_intervals()

    flusher = threading.Thread(target=flush, name="bench-flush", daemon=True)
    start_s = time.monotonic()
    sampler.start()
    flusher.start()
    load(start_s + seconds / 2)
    rss_half, blocks_half = proc.memory_info().rss, sys.getallocatedblocks()
    steps = load(start_s + seconds)
    rss_end, blocks_end = proc.memory_info().rss, sys.getallocatedblocks()
    wall_s = time.monotonic() - start_s
    stats = sampler.stats()
    sampler.stop()
    stop.set()
    flusher.join()
    rate_hz = 1 / stats.achieved_period_s if stats.achieved_period_s else 0.0
    ms = 1e3
    return {
        "phase": name,
        "rate Hz": f"{rate_hz:.3f}",
        "vs 40 Hz": f"{rate_hz / (1 / PERIOD_S) - 1:+.3%}",
        "late p50 ms": f"{(stats.lateness_p50_s or 0) * ms:.3f}",
        "late p99 ms": f"{(stats.lateness_p99_s or 0) * ms:.3f}",
        "late max ms": f"{(stats.lateness_max_s or 0) * ms:.1f}",
        "overruns": str(stats.overruns_total),
        "CPU % core": f"{100 * stats.thread_cpu_s / wall_s:.2f}",
        "RSS growth KiB": f"{(rss_end - rss_half) / 1024:+.0f}",
        "py blocks growth": f"{blocks_end - blocks_half:+d}",
        "reads": str(stats.reads_total),
        "load steps/s": f"{steps / (0.5 * seconds):.1f}" if steps else "-",
    }


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
    """Run the phases and print the table with its targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each phase (default 60)")
    parser.add_argument("--python-load", action="store_true", help="add a GIL-holding pure-Python phase")
    parser.add_argument(
        "--hours", type=float, default=1.0, help="simulated hours of the memory check (default 1)"
    )
    args = parser.parse_args(argv)
    import torch  # imported (2 s, holding the GIL) and warmed before any sampling starts

    torch.set_num_threads(1)
    torch_matmul(time.monotonic() + 0.5)
    phases: list[tuple[str, Load, bool]] = [
        ("idle", idle, False),
        ("idle, null sensor", idle, True),
        ("torch matmul", torch_matmul, False),
    ]
    if args.python_load:
        phases.append(("python loop", python_loop, False))
    load_avg = os.getloadavg()
    rows = [run_phase(name, load, args.seconds, null=null) for name, load, null in phases]
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in cols}
    print(
        f"\n{GPUS} GPUs at {1 / PERIOD_S:g} Hz, {args.seconds:g} s per phase, {os.cpu_count()} CPUs, "
        f"load average before {load_avg[0]:.2f}/{load_avg[1]:.2f}/{load_avg[2]:.2f}"
    )
    print(" | ".join(c.rjust(widths[c]) for c in cols))
    for r in rows:
        print(" | ".join(r[c].rjust(widths[c]) for c in cols))
    print(
        "targets: rate within 0.5 % of 40 Hz; p99 lateness <= 5 ms idle; "
        "sampler CPU <= 1 % of a core; RSS flat"
    )
    print(f"Python blocks held over {args.hours:g} simulated h (FakeClock): {memory_over_hours(args.hours)}")
    print(f"load average after {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
