"""Loads for bench.gpu_check: bf16 matrix products on a CUDA GPU, or the same patterns on a simulated one.

A load plays a :class:`Pattern` (steady, idle, or a square wave on absolute
times) for a while and owns the timeline while it does: the torch load runs
the sampler in its background thread and keeps the GPU busy on the calling
thread; the simulated load switches its GPU's trace and runs the sampler on a
FakeClock (no sleeping: a minute of simulated load takes well under a second).

torch is imported only inside :class:`TorchLoad`, and synchronises only there:
this is a bench, not the trainer.
"""

from __future__ import annotations

import importlib
import math
import sys
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from wattlog.clock import Clock, FakeClock, SystemClock
from wattlog.errors import ConfigError, WattlogError
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.simulated import SensorModel, SimulatedGpu
from wattlog.telemetry.sensors.traces import ConstantTrace, SquareWave, Trace


class LoadUnavailable(WattlogError):
    """The load cannot run here (no CUDA build of torch, no GPU); the check goes on without it."""


@dataclass(frozen=True, slots=True)
class Pattern:
    """What the GPU does: busy for `duty` of each `period_s`, on phases starting at phase_s + k x period_s.

    Times are the load's monotonic clock, so two runs with the same period and
    phase sit at the same place on a sensor grid of that period. duty 1 is a
    steady load, duty 0 idle.
    """

    duty: float
    period_s: float = 0.1
    phase_s: float = 0.0

    def __post_init__(self) -> None:
        if not (0.0 <= self.duty <= 1.0 and self.period_s > 0 and math.isfinite(self.phase_s)):
            raise ConfigError(f"a pattern needs 0 <= duty <= 1 and period_s > 0, got {self}")

    @property
    def on_s(self) -> float:
        """Busy time per period, seconds."""
        return self.duty * self.period_s

    def label(self) -> str:
        """E.g. "steady", "idle", "50/50 @100.0 ms +25 ms"."""
        if self.duty >= 1.0:
            return "steady"
        if self.duty <= 0.0:
            return "idle"
        on = round(100 * self.duty)
        return f"{on}/{100 - on} @{self.period_s * 1e3:.1f} ms +{self.phase_s * 1e3:.0f} ms"


class Load(Protocol):
    """A load generator bench.gpu_check drives."""

    def prepare(self) -> dict[str, Any]:
        """Get ready (allocate, warm up); what the load is, for the report.

        Raises:
            LoadUnavailable: The load cannot run here.
        """
        ...

    def gpu_uuid(self) -> str | None:
        """NVML UUID of the GPU it loads, once prepared (None: unknown, take the first)."""
        ...

    def play(self, pattern: Pattern, duration_s: float, sampler: Sampler) -> None:
        """Play `pattern` for `duration_s` while `sampler` samples; return when both are done."""
        ...

    def step(self) -> None:
        """One training-like step, finished when it returns (a product and a device sync on a GPU)."""
        ...


class TorchLoad:
    """bf16 matrix products on a CUDA GPU, busy-waiting on each product during on phases.

    Args:
        device_index: CUDA device (as torch numbers it, after CUDA_VISIBLE_DEVICES).
        max_matmul_s: The largest product whose time stays under this is used, so an
            on phase ends within about this much of its deadline.
        clock: Time source; the sampler must use the same one.
        torch: The torch module; None imports it in prepare().
    """

    def __init__(
        self,
        device_index: int = 0,
        max_matmul_s: float = 0.002,
        clock: Clock | None = None,
        torch: Any = None,
    ) -> None:
        self._index = device_index
        self._max_matmul_s = max_matmul_s
        self._clock = clock if clock is not None else SystemClock()
        self._torch: Any = torch
        self._matmul: Callable[[], Any] | None = None
        self._uuid: str | None = None

    def prepare(self) -> dict[str, Any]:
        """Import torch, pick the product size, warm up; size, time per product and TFLOP/s."""
        if self._torch is None:
            try:
                self._torch = importlib.import_module("torch")
            except ImportError as e:
                raise LoadUnavailable("torch is not installed: no load can run (pip install torch)") from e
        torch = self._torch
        if not torch.cuda.is_available():
            raise LoadUnavailable(f"torch {torch.__version__} sees no CUDA GPU: no load can run")
        device = torch.device("cuda", self._index)
        props = torch.cuda.get_device_properties(device)
        uuid = getattr(props, "uuid", None)
        self._uuid = f"GPU-{uuid}" if uuid is not None else None
        info: dict[str, Any] = {"load": "torch bf16 matmul", "torch": torch.__version__, "device": props.name}
        for n in (8192, 4096, 2048, 1024):
            a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
            b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
            out = torch.empty(n, n, device=device, dtype=torch.bfloat16)

            def matmul(a: Any = a, b: Any = b, out: Any = out) -> Any:
                return torch.matmul(a, b, out=out)

            seconds = self._time(matmul)
            if seconds <= self._max_matmul_s or n == 1024:
                self._matmul = matmul
                info.update(size=n, matmul_ms=seconds * 1e3, tflops=2 * n**3 / seconds / 1e12)
                return info
        raise AssertionError("unreachable: the smallest size is always taken")

    def _time(self, matmul: Callable[[], Any]) -> float:
        """Seconds per product, timed with CUDA events after a warm-up."""
        torch = self._torch
        for _ in range(5):
            matmul()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            matmul()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3 / 20

    def gpu_uuid(self) -> str | None:
        """See :class:`Load`."""
        return self._uuid

    def play(self, pattern: Pattern, duration_s: float, sampler: Sampler) -> None:
        """See :class:`Load`. The sampler thread runs beside the busy loop (a short GIL switch interval)."""
        if self._matmul is None:
            raise LoadUnavailable("TorchLoad.play before prepare()")
        switch_s = sys.getswitchinterval()
        sys.setswitchinterval(0.0005)  # the busy loop must not hold the sampler off for 5 ms slices
        try:
            with sampler:
                self._play(pattern, self._clock.monotonic() + duration_s)
        finally:
            sys.setswitchinterval(switch_s)

    def step(self) -> None:
        """See :class:`Load`: one product, then a device sync (so the step's time is its own)."""
        if self._matmul is None:
            raise LoadUnavailable("TorchLoad.step before prepare()")
        self._matmul()
        self._torch.cuda.synchronize()

    def _play(self, pattern: Pattern, end_s: float) -> None:
        if pattern.duty >= 1.0:
            self._busy_until(end_s)
        elif pattern.duty > 0.0:
            k = math.ceil((self._clock.monotonic() - pattern.phase_s) / pattern.period_s)
            while (on_s := pattern.phase_s + k * pattern.period_s) < end_s:
                self._clock.sleep(on_s - self._clock.monotonic())
                self._busy_until(min(on_s + pattern.on_s, end_s))
                k += 1
        self._clock.sleep(end_s - self._clock.monotonic())

    def _busy_until(self, t_s: float) -> None:
        assert self._matmul is not None
        while self._clock.monotonic() < t_s:
            self._matmul()
            self._torch.cuda.synchronize()


class ScheduleTrace:
    """Traces one after another: each runs from its switch time (its own t=0) to the next switch.

    Before the first switch the power is `before_w`. The integral stays exact.

    Args:
        before_w: Power before any switch, watts.
    """

    def __init__(self, before_w: float) -> None:
        self._starts: list[float] = [0.0]
        self._traces: list[Trace] = [ConstantTrace(before_w)]  # also holds for t < 0

    @property
    def duration_s(self) -> float:
        """Never ends."""
        return math.inf

    def switch(self, t_s: float, trace: Trace) -> None:
        """From `t_s` on, play `trace` (from its t=0); `t_s` must not precede the last switch."""
        if t_s < self._starts[-1]:
            raise ConfigError(f"switch at {t_s} precedes the last one at {self._starts[-1]}")
        self._starts.append(t_s)
        self._traces.append(trace)

    def power_w(self, t_s: float) -> float:
        """See :class:`~wattlog.telemetry.sensors.traces.Trace`."""
        i = max(bisect_right(self._starts, t_s) - 1, 0)
        return self._traces[i].power_w(t_s - self._starts[i])

    def energy_j(self, t0_s: float, t1_s: float) -> float:
        """See :class:`~wattlog.telemetry.sensors.traces.Trace`."""
        if t1_s < t0_s:
            return -self.energy_j(t1_s, t0_s)
        total_j = 0.0
        n = len(self._starts)
        for i, (start, trace) in enumerate(zip(self._starts, self._traces, strict=True)):
            lo = t0_s if i == 0 else max(t0_s, start)
            hi = t1_s if i + 1 == n else min(t1_s, self._starts[i + 1])
            if hi > lo:
                total_j += trace.energy_j(lo - start, hi - start)
        return total_j


class SimulatedLoad:
    """Plays patterns on a simulated GPU whose trace is a :class:`ScheduleTrace`; samples on a FakeClock.

    Args:
        gpu: The simulated GPU; its trace must be `schedule`.
        schedule: The trace the patterns are switched into.
        clock: The FakeClock the sampler, the integrator and the fake NVML share.
        on_w: True power while busy, watts.
        idle_w: True power while idle, watts.
    """

    def __init__(
        self, gpu: SimulatedGpu, schedule: ScheduleTrace, clock: FakeClock, on_w: float, idle_w: float
    ) -> None:
        self._gpu = gpu
        self._schedule = schedule
        self._clock = clock
        self._on_w = on_w
        self._idle_w = idle_w

    def prepare(self) -> dict[str, Any]:
        """See :class:`Load`."""
        return {
            "load": "simulated",
            "sensor": self._gpu.model.summary(),
            "on_w": self._on_w,
            "idle_w": self._idle_w,
        }

    def gpu_uuid(self) -> str | None:
        """See :class:`Load`."""
        return self._gpu.uuid

    def step(self) -> None:
        """See :class:`Load`: ~0.2 ms of Python arithmetic (real time: no GPU to wait on)."""
        x = 0
        for i in range(2_000):
            x += i * i

    def play(self, pattern: Pattern, duration_s: float, sampler: Sampler) -> None:
        """See :class:`Load`."""
        now_s = self._clock.monotonic()
        self._schedule.switch(now_s - self._gpu.t0_s, self._trace(pattern, now_s))
        sampler.run_until(now_s + duration_s)

    def _trace(self, p: Pattern, now_s: float) -> Trace:
        if p.duty >= 1.0:  # +-2 % ripple every 30 ms, so published values change as on a real board
            return SquareWave(1.02 * self._on_w, 0.98 * self._on_w, 0.015, 0.015)
        if p.duty <= 0.0:
            return ConstantTrace(self._idle_w)
        # the schedule's t=0 is now: on phases at phase + k x period in clock time
        return SquareWave(self._on_w, self._idle_w, p.on_s, p.period_s - p.on_s, phase_s=p.phase_s - now_s)


def simulated_gpu(
    counter: Literal["true", "observed"],
    clock: FakeClock,
    *,
    on_w: float = 600.0,
    idle_w: float = 80.0,
    phase_s: float = 0.0,
) -> tuple[SimulatedGpu, SimulatedLoad]:
    """An H100-like simulated GPU (25 ms of every 100 ms observed) and a load that drives it.

    Args:
        counter: Whether the GPU's energy counter integrates true power or the observed windows.
        clock: The FakeClock everything shares.
        on_w: True power while busy, watts.
        idle_w: True power while idle, watts.
        phase_s: Offset of the sensor's publication grid from the clock's (a real one is anywhere).
    """
    schedule = ScheduleTrace(idle_w)
    model = SensorModel.h100().with_counter(counter).with_phase(phase_s)
    gpu = SimulatedGpu(
        "GPU-sim-0000",
        f"NVIDIA H100 80GB HBM3 (simulated, counter integrates {counter})",
        schedule,
        model,
        power_limit_w=700.0,
        idle_w=idle_w,
        t0_s=clock.monotonic(),
    )
    return gpu, SimulatedLoad(gpu, schedule, clock, on_w, idle_w)
