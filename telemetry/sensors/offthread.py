"""A slow sensor (a BMC over Redfish or IPMI) read on its own thread, with a deadline.

The sampler reads every device on one thread, on absolute deadlines. On 38e5f82 a BMC that
answered after 30 s held that thread for 30 s: the CPU and DRAM went unread, 84 J were lost
and the run was marked NOT VALID. :class:`OffThreadSensor` wraps such a sensor: its reads run
on a worker thread, and the sampler's ``read`` never waits. It returns the latest reading the
worker finished (once as new, then as a repeat the integrator does not count twice), asks the
worker for the next one when the device is due, and raises :class:`~wattlog.errors.SensorError`
(a failed read: the integrator records the stretch as a gap) when the worker's read failed or
has not answered within ``deadline_s``, until a fresh reading arrives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from wattlog.errors import SensorError
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.types import DeviceInfo, Reading


@dataclass
class _State:
    """One device's reads: the latest finished, whether the sampler has it, what is in flight."""

    latest: Reading | None = None
    handed: bool = False
    failed: str | None = None  # why the last read failed (raised until a fresh reading arrives)
    asked_s: float | None = None  # when the read in flight was asked for (None: none in flight)


class OffThreadSensor:
    """Reads `sensor` on a worker thread; the sampler's reads return at once.

    Args:
        sensor: The slow sensor (its `read` may block for its own timeout, or longer).
        deadline_s: How long a read may take before it counts as failed (a gap).
        clock: Monotonic seconds, the sampler's clock (readings are stamped on it).
    """

    def __init__(
        self, sensor: Sensor, deadline_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.sensor = sensor
        self.deadline_s = deadline_s
        self._clock = clock
        self._states: dict[str, _State] = {}
        self._queue: list[DeviceInfo] = []
        self._lock = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def devices(self) -> list[DeviceInfo]:
        """The wrapped sensor's devices, each read once (probed on the caller's thread, at discovery)."""
        found = self.sensor.devices()
        for device in found:
            state = self._states.setdefault(device.uuid, _State())
            try:
                state.latest = self.sensor.read(device, self._clock())
            except Exception as error:  # the sampler's first read says it: a gap until one answers
                state.failed = _described(error)
        return found

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """The latest finished reading of `device`; never blocks on the device.

        Raises:
            SensorError: The last read failed, or the one in flight is past its deadline.
        """
        with self._lock:
            state = self._states.setdefault(device.uuid, _State())
            latest = state.latest
            if state.asked_s is None and (latest is None or state.handed or state.failed):
                due_s = latest.next_read_s if latest is not None else None
                if state.failed or due_s is None or t_s >= due_s:
                    self._ask(device, state, t_s)
            if state.asked_s is not None and t_s - state.asked_s > self.deadline_s and not state.failed:
                state.failed = f"{device.uuid}: no answer in {self.deadline_s:.1f} s"
            if state.failed is not None:
                raise SensorError(state.failed)
            if latest is None:  # the first read is in flight: nothing to show yet, nothing lost
                raise SensorError(f"{device.uuid}: first read in flight")
            if not state.handed:
                state.handed = True
                return latest
            return replace(latest, next_read_s=None)  # the same publication again: not counted twice

    def _ask(self, device: DeviceInfo, state: _State, t_s: float) -> None:
        """Queue a read of `device` for the worker (the caller holds the lock)."""
        state.asked_s = t_s
        self._queue.append(device)
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="wattlog-bmc-reader", daemon=True)
            self._thread.start()
        self._lock.notify()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                device = self._queue.pop(0)
            try:
                reading: Reading | None = self.sensor.read(device, self._clock())
                failed = None
            except Exception as error:  # the sampler raises it as a failed read: a gap
                reading, failed = None, _described(error)
            with self._lock:
                state = self._states[device.uuid]
                state.asked_s = None
                if reading is not None:
                    state.latest, state.handed, state.failed = reading, False, None
                else:
                    state.failed = failed

    def close(self) -> None:
        """Stop the worker (a read stuck in the device is left to its daemon thread) and close the sensor."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self.sensor.close()


def _described(error: Exception) -> str:
    """The failure as the sampler will store it: a SensorError's own words (the sampler raises one
    and names its type: "SensorError: SensorError: ..." otherwise), any other error with its type."""
    return str(error) if isinstance(error, SensorError) else f"{type(error).__name__}: {error}"
