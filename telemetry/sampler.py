"""The sampler: reads every device on absolute 25 ms deadlines in a background thread.

Deadline k is ``t0 + k * period_s``; the loop sleeps until it, so lateness
never accumulates into drift (STYLE: no "sleep the rest of the period").
When a tick ends more than a period late (a blocked NVML call, a starved
process), the deadlines it missed are skipped, not caught up in a burst, and
counted as overruns. A failing read never kills the loop: it is handed to the
sink as a failure (the integrator records the gap) and sampling goes on.

A reading may say when its device can next show something new
(`Reading.next_read_s`: a GPU's driver publishes every ~100 ms, so three
25 ms reads in four would only repeat the last publication); ticks before
then skip that device, and devices due at nearby times share one wake
(each read by halfway to its next publication: see _next_deadline). Edge
readings (start, close) read every device.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from wattlog.clock import Clock, SystemClock
from wattlog.errors import ConfigError, DeviceLost
from wattlog.telemetry.read_warnings import ReadWarnings
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.types import DeviceInfo, Reading, reading_problem

logger = logging.getLogger(__name__)

_LATENESS_WINDOW = 4096  # ring of recent lateness values: ~100 s at 40 Hz, memory flat
_CPU_EVERY = 16  # ticks between reads of the thread's CPU time
_ANY_TIME = -math.inf  # a device with no next_read_s is read on every tick
_GRID_EPS = 1e-9  # a due time on a deadline (to rounding) is that deadline, not the next
# Waits up to this long are a plain sleep: on this project's 2-core VM a wake from Event.wait
# cost ~150 us of thread CPU against ~100 us for time.sleep, and a GPU paced once per 100 ms
# publication waits ~75 ms at a time. Longer waits (an estimate published once a second, an
# idle device) wait on the stop event. So stop() is noticed within max(period, this).
_SLEEP_MAX_S = 0.15


class ReadingSink(Protocol):
    """Where the sampler hands readings and failures (the Integrator)."""

    def add(self, reading: Reading) -> None:
        """Take one reading."""
        ...

    def record_failure(self, device_uuid: str, t_s: float, reason: str, lost: bool) -> None:
        """A read of `device_uuid` at monotonic `t_s` failed; `lost` when the device is gone."""
        ...


@dataclass(frozen=True, slots=True)
class SamplerStats:
    """The sampler's health.

    Attributes:
        samples_total: Ticks completed (each reads every device that is due), slept-through ones included.
        reads_total: Device reads attempted.
        errors_total: Device reads that failed (each handed to the sink as a failure).
        overruns_total: Deadlines skipped because a tick ran more than a period late.
        achieved_period_s: Mean time between ticks, None before two ticks.
        lateness_p50_s: Median lateness of recent ticks behind their deadline, seconds.
        lateness_p99_s: 99th percentile of the same.
        lateness_max_s: Largest lateness since start.
        running: Whether the background thread runs.
        thread_cpu_s: CPU time the sampler thread used since it started, seconds.
        idle_ticks_total: Ticks slept through because no device was due (counted in samples_total).
    """

    samples_total: int
    reads_total: int
    errors_total: int
    overruns_total: int
    achieved_period_s: float | None
    lateness_p50_s: float | None
    lateness_p99_s: float | None
    lateness_max_s: float | None
    running: bool
    thread_cpu_s: float = 0.0
    idle_ticks_total: int = 0


class Sampler:
    """Reads every device of `sensors` once per `period_s` and hands readings to `sink`.

    Args:
        sensors: The backends to read; `devices()` is called on the first tick, not here.
        sink: Receives readings and failures (called on the sampler's thread).
        period_s: Sampling period, seconds (25 ms = 40 Hz by default).
        clock: Time source; a FakeClock makes the loop run instantly in tests.
        name: Name of the background thread.

    Raises:
        ConfigError: If `period_s` is not positive.
    """

    def __init__(
        self,
        sensors: Sequence[Sensor],
        sink: ReadingSink,
        *,
        period_s: float = 0.025,
        clock: Clock | None = None,
        name: str = "wattlog-sampler",
    ) -> None:
        if not period_s > 0:
            raise ConfigError(f"sampling period must be > 0 s, got {period_s}; try 0.025")
        self._sink = sink
        self._period_s = period_s
        self._clock = clock if clock is not None else SystemClock()
        self._name = name
        self._undiscovered = list(sensors)
        self._devices: list[tuple[Sensor, DeviceInfo]] = []
        self._next_read_s: dict[str, float] = {}  # by UUID: skip the device on ticks before this
        self._spacing_s: dict[str, float] = {}  # by UUID: the shortest step seen between its due times
        self._warnings = ReadWarnings()
        # Held for a whole tick: the loop and an edge reading (start, close) never interleave, and
        # stats() copies the health figures between ticks (one lock per tick, not one for the reads
        # and another for the figures).
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ticks = 0
        self._idle_ticks = 0
        self._reads = 0
        self._errors = 0
        self._overruns = 0
        self._first_tick_s: float | None = None
        self._last_tick_s: float | None = None
        self._lateness = array("d", bytes(8 * _LATENESS_WINDOW))
        self._lateness_n = 0
        self._lateness_max_s: float | None = None
        self._cpu_s = 0.0

    @property
    def period_s(self) -> float:
        """The sampling period, seconds."""
        return self._period_s

    def tick(self, now_s: float | None = None) -> float:
        """Read every live device once, stamping readings with `now_s` (default: clock now); returns it.

        Safe beside the background loop: it waits for the loop's tick in flight, never
        interleaves with it.
        """
        with self._lock:
            now_s = self._clock.monotonic() if now_s is None else now_s
            self._tick(now_s)
            return now_s

    def edge(self) -> float:
        """Read every live device now, outside the tick grid (the agent's start and close); the time.

        Counted as reads, not as ticks, so the achieved period stays the loop's.
        """
        with self._lock:
            now_s = self._clock.monotonic()
            self._tick(now_s, counted=False)
            return now_s

    def _tick(
        self, now_s: float, lateness_s: float | None = None, *, counted: bool = True, idle: int = 0
    ) -> None:
        """Read every due device; `idle` deadlines before this one were slept through (nothing due).

        The caller holds self._lock.
        """
        if self._undiscovered:
            self._discover(now_s)
        next_read_s, spacing_s = self._next_read_s, self._spacing_s
        add, reads = self._sink.add, 0
        for sensor, device in tuple(self._devices):  # a copy: a lost device is removed mid-loop
            uuid = device.uuid
            due_s = next_read_s.get(uuid, _ANY_TIME)
            if counted and now_s < due_s:
                continue  # nothing new before its next publication
            reads += 1
            try:
                reading = sensor.read(device, now_s)
                problem = reading_problem(reading)
                if problem is not None:  # NaN or negative: a failed read (a gap), never energy
                    raise ValueError(problem)
                add(reading)
                new_due_s = _ANY_TIME if reading.next_read_s is None else reading.next_read_s
                if _ANY_TIME < due_s < new_due_s < math.inf:
                    spacing_s[uuid] = min(spacing_s.get(uuid, math.inf), new_due_s - due_s)
                next_read_s[uuid] = new_due_s
            except DeviceLost as e:
                self._errors += 1
                self._devices.remove((sensor, device))
                logger.warning("device %s lost, no longer read: %s", uuid, e)
                self._sink.record_failure(uuid, now_s, str(e), True)
            except Exception as e:  # a sensor must never kill the loop: the gap is recorded
                self._errors += 1
                self._warnings.warn(uuid, now_s, e, bridged=device.has_counter)
                self._sink.record_failure(uuid, now_s, f"{type(e).__name__}: {e}", False)
                # its due time stays the old one, so it is retried on the next tick
        self._reads += reads
        if counted:
            self._ticks += 1 + idle
            self._idle_ticks += idle
            if self._first_tick_s is None:
                self._first_tick_s = now_s
            self._last_tick_s = now_s
            if lateness_s is not None:
                self._lateness[self._lateness_n % _LATENESS_WINDOW] = lateness_s
                self._lateness_n += 1
                if self._lateness_max_s is None or lateness_s > self._lateness_max_s:
                    self._lateness_max_s = lateness_s

    def _next_deadline(self, t0_s: float, period_s: float) -> float:
        """Which deadline (k of t0 + k x period) to read on next; -inf: the next one, whatever it is.

        A device due at d (its next publication) may be read on any deadline from the first
        at or after d to the last at or before d + s / 2, s the shortest step seen between its
        due times (0 until two are known; then the first deadline after d only, as for a
        device that publishes faster than the sampler wakes). Halfway to the publication after
        d, a late read never misses one, and a stall that skipped one does not widen s. The
        next read is on the latest first deadline that no device's last deadline precedes:
        the earliest wake that still reads every device a later one could. Devices due
        together are read when due; 8 GPUs whose drivers publish at 8 phases share 2-3 wakes
        per publication instead of 4, and the estimate is read on a GPU's wake. -inf while a
        device is read on every tick, or discovery is still to be retried.
        """
        if self._undiscovered or not self._devices:
            return _ANY_TIME
        firsts: list[int] = []
        last = math.inf
        for _, device in self._devices:
            due_s = self._next_read_s.get(device.uuid, _ANY_TIME)
            if due_s == _ANY_TIME:
                return _ANY_TIME
            first = math.ceil((due_s - t0_s) / period_s - _GRID_EPS)
            by_s = due_s + self._spacing_s.get(device.uuid, 0.0) / 2
            last = min(last, max(first, math.floor((by_s - t0_s) / period_s + _GRID_EPS)))
            firsts.append(first)
        return max(first for first in firsts if first <= last)

    def run_until(self, end_s: float) -> None:
        """Run the deadline loop on the calling thread until the clock reaches `end_s` (or stop())."""
        self._loop(end_s)

    def start(self) -> Sampler:
        """Start the background thread (a daemon); returns self."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=(math.inf,), name=self._name, daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Ask the loop to stop and join the thread (it notices within max(period, 150 ms)).

        A read that blocks (NVML on a faulted GPU can hold a call for tens of seconds)
        keeps the thread alive past `timeout_s`: that is logged as a warning naming the
        thread, the thread stays referenced (`running` stays True), and a later stop()
        joins it again.

        Returns:
            True if the thread has stopped (or never ran), False if it is still running.
        """
        self._stop.set()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout_s)
        if thread.is_alive():
            logger.warning(
                "sampler thread %r still running %.1f s after stop (a sensor read is blocked); "
                "its readings after this are not integrated",
                thread.name,
                timeout_s,
            )
            return False
        self._thread = None
        return True

    @property
    def running(self) -> bool:
        """Whether the background thread is alive; never waits (stats() waits for a tick to end)."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def stats(self) -> SamplerStats:
        """A consistent copy of the sampler's counters and lateness percentiles."""
        with self._lock:
            n = min(self._lateness_n, _LATENESS_WINDOW)
            recent = sorted(self._lateness[:n])
            ticks = self._ticks
            span = None
            if ticks >= 2 and self._first_tick_s is not None and self._last_tick_s is not None:
                span = (self._last_tick_s - self._first_tick_s) / (ticks - 1)
            return SamplerStats(
                samples_total=ticks,
                reads_total=self._reads,
                errors_total=self._errors,
                overruns_total=self._overruns,
                achieved_period_s=span,
                lateness_p50_s=_percentile(recent, 0.50),
                lateness_p99_s=_percentile(recent, 0.99),
                lateness_max_s=self._lateness_max_s,
                running=self.running,
                thread_cpu_s=self._cpu_s,
                idle_ticks_total=self._idle_ticks,
            )

    def _loop(self, end_s: float) -> None:
        cpu0_s = time.thread_time()
        period_s, stop = self._period_s, self._stop
        sleep_max_s = max(period_s, _SLEEP_MAX_S)
        monotonic, sleep, wait = self._clock.monotonic, self._clock.sleep, self._clock.wait
        t0_s = now_s = monotonic()
        k = 0
        idle = 0  # deadlines slept through since the last tick: no device was due on them
        wakes = 0
        while not stop.is_set():
            deadline_s = t0_s + k * period_s
            if deadline_s >= end_s:
                break
            # Up to a GPU's publication period: a plain sleep (the cheapest wake-up). Longer, when
            # no device is due for a while: one wait on the stop event, so stop() is noticed at once.
            while now_s < deadline_s:
                if deadline_s - now_s <= sleep_max_s:
                    sleep(deadline_s - now_s)
                elif wait(stop, deadline_s - now_s):
                    break
                now_s = monotonic()
            if stop.is_set():
                break
            with self._lock:  # the tick reads at the time its lateness is measured from
                self._tick(now_s, lateness_s=now_s - deadline_s, idle=idle)
                wake_k = self._next_deadline(t0_s, period_s)
            k += 1
            wakes += 1
            now_s = monotonic()  # also the next deadline's first check
            behind = (now_s - t0_s) / period_s
            if behind > k + 1:  # more than a period late: skip to the next future deadline
                skipped = math.floor(behind) + 1 - k
                with self._lock:
                    self._overruns += skipped
                k += skipped
            # Sleep through the deadlines before the next read (never past a late one).
            idle = 0
            if wake_k > k:
                idle = int(wake_k) - k
                k += idle
            # a system call, not a vDSO read: not on every tick, but before every long sleep
            if idle or wakes % _CPU_EVERY == 0:
                self._cpu_s = time.thread_time() - cpu0_s
        # deadlines slept through before the stop (or the end) are ticks too
        passed = min(k, math.floor((monotonic() - t0_s) / period_s + _GRID_EPS) + 1) - (k - idle)
        if idle and passed > 0:
            with self._lock:
                self._ticks += passed
                self._idle_ticks += passed
                self._last_tick_s = t0_s + (k - idle + passed - 1) * period_s
        self._cpu_s = time.thread_time() - cpu0_s

    def _discover(self, now_s: float) -> None:
        for sensor in list(self._undiscovered):
            try:
                self._devices.extend((sensor, d) for d in sensor.devices())
                self._undiscovered.remove(sensor)
            except Exception as e:  # a broken backend must not stop the others; retried next tick
                self._errors += 1
                self._warnings.warn(type(sensor).__name__, now_s, e)


def _percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of already sorted values; None when empty."""
    if not sorted_values:
        return None
    rank = max(0, math.ceil(q * len(sorted_values)) - 1)
    return sorted_values[rank]
