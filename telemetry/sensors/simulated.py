"""A simulated GPU that reads a power trace through a real sensor's semantics.

What NVIDIA's sensor does on A100/H100 (Yang, Adamek, Armour, SC24): a value is
published every ~100 ms, and it averages only the last ~25 ms of that period;
nvmlDeviceGetPowerUsage on Ampere+ (except GA100) is a 1 s trailing average of
those values; board gain errors ran from -9.5 % to +6.4 %; the millijoule energy
counter updates every ~100 ms and may integrate true power or only the observed
windows (not publicly known, so both are offered). The trace's exact integral is
kept beside every reading, so estimators are scored against ground truth.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from wattlog.errors import ConfigError, DeviceLost, SensorError
from wattlog.records import Kind, Source
from wattlog.telemetry.sensors.profiles import board_profile
from wattlog.telemetry.sensors.traces import Trace, TrainingTrace
from wattlog.telemetry.types import DeviceInfo, Reading, Vendor

# Publication and update times are computed as floor((t - phase) / period); this
# keeps t = 0.3 with period 0.1 on publication 3 despite 0.3 / 0.1 = 2.999...
_GRID_EPS = 1e-9


@dataclass
class SensorModel:
    """How the simulated board turns true power into readings.

    Attributes:
        publish_period_s: A new power value is published every this many seconds.
        observed_window_s: Each published value averages true power over this trailing window.
        average_window_s: The "average" reading (GetPowerUsage) averages published values over this.
        gain: Calibration error: every reading and the counter are true x gain.
        counter_update_s: The energy counter updates every this many seconds.
        counter_integrates: "true": the counter integrates true power; "observed": it sums
            the published values x the publication period (only the observed windows count).
        phase_s: Publication and counter-update grids sit at phase_s + k x period.
    """

    publish_period_s: float = 0.1
    observed_window_s: float = 0.025
    average_window_s: float = 1.0
    gain: float = 1.0
    counter_update_s: float = 0.1
    counter_integrates: Literal["true", "observed"] = "true"
    phase_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.publish_period_s > 0:
            raise ConfigError(f"publish_period_s must be > 0, got {self.publish_period_s}")
        if not 0 < self.observed_window_s <= self.publish_period_s:
            raise ConfigError(
                f"observed_window_s must be in (0, publish_period_s={self.publish_period_s}], "
                f"got {self.observed_window_s}"
            )
        if not self.average_window_s >= self.publish_period_s:
            raise ConfigError(f"average_window_s must be >= publish_period_s, got {self.average_window_s}")
        if not (self.gain > 0 and math.isfinite(self.gain)):
            raise ConfigError(f"gain must be a finite number > 0 (1.0 = calibrated), got {self.gain}")
        if not self.counter_update_s > 0:
            raise ConfigError(f"counter_update_s must be > 0, got {self.counter_update_s}")
        if self.counter_integrates not in ("true", "observed"):
            raise ConfigError(
                f"counter_integrates must be 'true' or 'observed', got {self.counter_integrates!r}"
            )
        if not math.isfinite(self.phase_s):
            raise ConfigError(f"phase_s must be finite, got {self.phase_s}")

    @classmethod
    def h100(cls) -> SensorModel:
        """H100: 25 ms observed of each 100 ms, GetPowerUsage a 1 s trailing average."""
        return cls(publish_period_s=0.1, observed_window_s=0.025, average_window_s=1.0)

    @classmethod
    def a100(cls) -> SensorModel:
        """A100 (GA100): 25 ms observed of each 100 ms; GetPowerUsage is the latest value, no 1 s mean."""
        return cls(publish_period_s=0.1, observed_window_s=0.025, average_window_s=0.1)

    @classmethod
    def ideal(cls, period_s: float = 0.001) -> SensorModel:
        """A perfect sensor: every reading is the true mean over the last `period_s`, counter exact."""
        return cls(period_s, period_s, period_s, 1.0, period_s, "true", 0.0)

    def with_gain(self, gain: float) -> SensorModel:
        """A copy with another calibration gain (e.g. 1.064 for a board reading 6.4 % high)."""
        return replace(self, gain=gain)

    def with_counter(self, integrates: Literal["true", "observed"]) -> SensorModel:
        """A copy whose counter integrates true power or only the observed windows."""
        return replace(self, counter_integrates=integrates)

    def with_phase(self, phase_s: float) -> SensorModel:
        """A copy whose publication grid is shifted by `phase_s`."""
        return replace(self, phase_s=phase_s)

    def summary(self) -> str:
        """One line, e.g. "25 ms of every 100 ms, 1 s average, gain 1.000, counter integrates true"."""
        return (
            f"{self.observed_window_s * 1e3:g} ms of every {self.publish_period_s * 1e3:g} ms, "
            f"{self.average_window_s:g} s average, gain {self.gain:.3f}, "
            f"counter integrates {self.counter_integrates} power"
        )


class SimulatedGpu:
    """One simulated GPU replaying `trace` through `model`.

    Times are the caller's monotonic seconds; the trace's t=0 (and the driver load,
    the counter's origin) is at `t0_s`.

    Args:
        uuid: Stable key, e.g. "GPU-sim-0000".
        name: Board name.
        trace: True power over time.
        model: Sensor semantics (default: H100).
        power_limit_w: Enforced power limit, watts.
        idle_w: Power at 0 % utilisation (utilisation is derived from true power).
        resets_at_s: Times at which the energy counter restarts from 0 (driver reload).
        lost_at_s: From this time on every read raises DeviceLost (None: never).
        memory_total_bytes: Board memory.
        memory_used_bytes: Memory in use (constant).
        t0_s: Monotonic time of the trace's t=0 and of the driver load.
        vendor: Whose board it stands for; its sensor profile is that vendor's for `name`.
    """

    def __init__(
        self,
        uuid: str,
        name: str,
        trace: Trace,
        model: SensorModel | None = None,
        power_limit_w: float = 700.0,
        *,
        idle_w: float = 70.0,
        resets_at_s: tuple[float, ...] = (),
        lost_at_s: float | None = None,
        memory_total_bytes: int = 80 * 1024**3,
        memory_used_bytes: int = 60 * 1024**3,
        t0_s: float = 0.0,
        vendor: Vendor = Vendor.NVIDIA,
    ) -> None:
        if not 0 <= idle_w < power_limit_w:
            raise ConfigError(f"need 0 <= idle_w < power_limit_w, got {idle_w} and {power_limit_w}")
        if not 0 <= memory_used_bytes <= memory_total_bytes:
            raise ConfigError("memory_used_bytes must be within [0, memory_total_bytes]")
        self.uuid = uuid
        self.name = name
        self.trace = trace
        self.model = model if model is not None else SensorModel.h100()
        self.power_limit_w = power_limit_w
        self.idle_w = idle_w
        self.resets_at_s = tuple(sorted(resets_at_s))
        self.lost_at_s = lost_at_s
        self.memory_total_bytes = memory_total_bytes
        self.memory_used_bytes = memory_used_bytes
        self.t0_s = t0_s
        self.vendor = vendor
        # "observed" counter: running sum over publications, extended as time moves on
        self._lock = threading.Lock()
        self._obs_origin_s = math.nan
        self._obs_k = 0
        self._obs_j = 0.0
        self._pub_cache: tuple[int, float] = (-(2**62), 0.0)

    # -- ground truth -------------------------------------------------------

    def true_power_w(self, t_s: float) -> float:
        """True instantaneous power at `t_s` (never raises)."""
        return self.trace.power_w(t_s - self.t0_s)

    def true_energy_j(self, t0_s: float, t1_s: float) -> float:
        """Exact integral of true power over [t0_s, t1_s], joules (never raises)."""
        return self.trace.energy_j(t0_s - self.t0_s, t1_s - self.t0_s)

    def is_lost(self, t_s: float) -> bool:
        """Whether the GPU has fallen off the bus by `t_s`."""
        return self.lost_at_s is not None and t_s >= self.lost_at_s

    # -- what the sensor reports -------------------------------------------

    def _check(self, t_s: float) -> None:
        if self.is_lost(t_s):
            raise DeviceLost(self.uuid, f"simulated loss at t={self.lost_at_s:g} s")

    def _grid(self, t_s: float, period_s: float) -> int:
        """Index k of the latest grid time phase + k x period <= t_s."""
        return math.floor((t_s - self.model.phase_s) / period_s + _GRID_EPS)

    def _published_w(self, k: int) -> float:
        """The value published at phase + k x period (gain applied); the latest one is cached."""
        if k == self._pub_cache[0]:
            return self._pub_cache[1]
        m = self.model
        tp = m.phase_s + k * m.publish_period_s
        value = m.gain * self.true_energy_j(tp - m.observed_window_s, tp) / m.observed_window_s
        self._pub_cache = (k, value)
        return value

    def published_s(self, t_s: float) -> float:
        """When the value the sensor shows at `t_s` was published (the driver's field timestamp)."""
        m = self.model
        return m.phase_s + self._grid(t_s, m.publish_period_s) * m.publish_period_s

    def counter_updated_s(self, t_s: float) -> float:
        """When the energy counter last updated at or before `t_s`."""
        m = self.model
        return m.phase_s + self._grid(t_s, m.counter_update_s) * m.counter_update_s

    def instant_power_w(self, t_s: float) -> float:
        """The latest published value at `t_s` (NVML_FI_DEV_POWER_INSTANT), watts."""
        self._check(t_s)
        return self._published_w(self._grid(t_s, self.model.publish_period_s))

    def average_power_w(self, t_s: float) -> float:
        """Mean of the values published in the trailing average window (GetPowerUsage), watts."""
        self._check(t_s)
        m = self.model
        k = self._grid(t_s, m.publish_period_s)
        n = max(1, round(m.average_window_s / m.publish_period_s))
        if m.observed_window_s == m.publish_period_s:  # windows tile: one integral, O(log n)
            tp = m.phase_s + k * m.publish_period_s
            return m.gain * self.true_energy_j(tp - n * m.publish_period_s, tp) / (n * m.publish_period_s)
        return sum(self._published_w(j) for j in range(k - n + 1, k + 1)) / n

    def energy_mj(self, t_s: float) -> float:
        """The energy counter at `t_s`: millijoules since the driver loaded or the last reset."""
        self._check(t_s)
        m = self.model
        origin_s = self.t0_s
        i = bisect_right(self.resets_at_s, t_s)
        if i:
            origin_s = max(origin_s, self.resets_at_s[i - 1])
        update_s = self.counter_updated_s(t_s)
        if t_s < self.t0_s or update_s < origin_s:  # not loaded yet, or reset and not updated since
            return 0.0
        if m.counter_integrates == "true":
            return 1e3 * m.gain * self.true_energy_j(origin_s, update_s)
        return 1e3 * self._observed_j(origin_s, update_s)

    def _observed_j(self, origin_s: float, update_s: float) -> float:
        """Sum of published values x period over publications in (origin_s, update_s]."""
        m = self.model
        first_k = self._grid(origin_s, m.publish_period_s) + 1
        last_k = self._grid(update_s, m.publish_period_s)
        with self._lock:
            if self._obs_origin_s != origin_s or self._obs_k > last_k + 1:
                self._obs_origin_s, self._obs_k, self._obs_j = origin_s, first_k, 0.0
            # reads move forward in time, so this adds only the publications since the last read
            for k in range(self._obs_k, last_k + 1):
                self._obs_j += self._published_w(k) * m.publish_period_s
            self._obs_k = max(self._obs_k, last_k + 1)
            return self._obs_j

    def utilisation_pct(self, t_s: float) -> float:
        """GPU utilisation, derived from true power between idle_w and power_limit_w, 0-100."""
        self._check(t_s)
        share = (self.true_power_w(t_s) - self.idle_w) / (self.power_limit_w - self.idle_w)
        return round(100.0 * min(max(share, 0.0), 1.0))

    def temperature_c(self, t_s: float) -> float:
        """Board temperature: 30 C plus 0.06 C per watt of the last 10 s mean true power."""
        self._check(t_s)
        return round(30.0 + 0.06 * self.true_energy_j(t_s - 10.0, t_s) / 10.0)


class SimulatedSensor:
    """The Sensor backend over simulated GPUs; every figure is labelled `simulated`.

    Args:
        gpus: The GPUs, in index order.
    """

    def __init__(self, gpus: Sequence[SimulatedGpu]) -> None:
        uuids = [g.uuid for g in gpus]
        if len(set(uuids)) != len(uuids):
            raise ConfigError(f"simulated GPUs need distinct UUIDs, got {uuids}")
        self.gpus = list(gpus)
        self._by_uuid = {g.uuid: g for g in self.gpus}

    def devices(self) -> list[DeviceInfo]:
        """One DeviceInfo per GPU, source `simulated`, with an energy counter."""
        return [
            DeviceInfo(
                uuid=g.uuid,
                name=g.name,
                kind=Kind.GPU,
                source=Source.SIMULATED,
                has_counter=True,
                counter_range_mj=None,
                power_limit_w=g.power_limit_w,
                index=i,
                note=f"simulated: {g.model.summary()}",
                vendor=g.vendor,
                profile=board_profile(g.vendor, g.name),
            )
            for i, g in enumerate(self.gpus)
        ]

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """Counter, instantaneous power, utilisation, temperature and memory at `t_s`."""
        gpu = self._by_uuid.get(device.uuid)
        if gpu is None:
            raise SensorError(f"{device.uuid} is not one of this simulator's GPUs")
        return Reading(
            device=gpu.uuid,
            t_s=t_s,
            energy_mj=gpu.energy_mj(t_s),
            power_w=gpu.instant_power_w(t_s),
            utilisation_pct=gpu.utilisation_pct(t_s),
            temperature_c=gpu.temperature_c(t_s),
            memory_used_bytes=gpu.memory_used_bytes,
            energy_t_s=gpu.counter_updated_s(t_s),
            power_t_s=gpu.published_s(t_s),
        )

    def close(self) -> None:
        """Nothing to release."""


def simulated_gpus(
    n: int,
    trace_factory: Callable[[int], Trace] | None = None,
    *,
    seed: int = 0,
    model: SensorModel | None = None,
    name: str = "NVIDIA H100 80GB HBM3 (simulated)",
    power_limit_w: float = 700.0,
    t0_s: float = 0.0,
) -> list[SimulatedGpu]:
    """N simulated GPUs "GPU-sim-0000", "GPU-sim-0001", ...

    Args:
        n: How many (>= 0).
        trace_factory: index -> trace; default a 600 s TrainingTrace seeded with seed + index.
        seed: Base seed of the default traces.
        model: Sensor semantics of every GPU (default H100).
        name: Board name of every GPU.
        power_limit_w: Power limit of every GPU, watts.
        t0_s: Monotonic time of the traces' t=0 (e.g. clock.monotonic() at start).
    """
    if n < 0:
        raise ConfigError(f"the number of simulated GPUs must be >= 0, got {n}")
    factory = trace_factory or (lambda i: TrainingTrace.generate(seed=seed + i, duration_s=600.0))
    return [
        SimulatedGpu(f"GPU-sim-{i:04d}", name, factory(i), model, power_limit_w, t0_s=t0_s) for i in range(n)
    ]
