"""CPU and DRAM power estimated from utilisation when no sensor exists (labelled `estimated`).

The model, each constant with its source:

    cpu_w  = tdp_w x (idle_fraction + (1 - idle_fraction) x utilisation)
    dram_w = w_per_gb x the job's memory in GB

Without a configured TDP, the CPU is charged per logical CPU the job may run
on (its affinity set, so a Slurm cpuset or a container's share, not the whole
host). The memory is the job's: the cgroup memory limit when there is one,
else the installed RAM. CodeCarbon charged 3 W per 8 GB of the host's RAM and
reported 378 W for the RAM of a shared node (mlco2/codecarbon#629); the
per-GB figure here is measured and validated against an upper bound.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

import psutil

from wattlog.errors import ConfigError, SensorError
from wattlog.records import Kind, Source
from wattlog.telemetry.types import DeviceInfo, Reading

CPU_UUID = "estimate:cpu"
DRAM_UUID = "estimate:dram"
_GB = 1e9
# Above CodeCarbon's old 3 W per 8 GB (0.375 W/GB), which measurements contradict (see EstimateConfig).
_MAX_DRAM_W_PER_GB = 0.4
_CGROUP_MEMORY_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)


@dataclass
class EstimateConfig:
    """Constants of the utilisation model; every default names its source."""

    cpu_tdp_w: float | None = None
    """CPU power at 100 % utilisation for the job's CPUs, watts; None: cpu_w_per_thread x logical CPUs."""

    cpu_w_per_thread: float = 3.5
    """Watts per logical CPU at 100 %: Cloud Carbon Footprint's AWS average max watts per vCPU,
    derived from SPECpower results (cloudcarbonfootprint.org/docs/methodology)."""

    cpu_idle_fraction: float = 0.21
    """CPU power at 0 % utilisation as a fraction of cpu_tdp_w: Cloud Carbon Footprint's AWS
    average min/max watts per vCPU, 0.74 W / 3.5 W (same SPECpower-based source)."""

    dram_w_per_gb: float = 0.06
    """DRAM watts per GB: Tailpipe's turbostat (RAPL DRAM) measurements on 37 bare-metal DDR4
    platforms, 0.048-0.061 W/GB (tailpipe.ai/methodology); far below CodeCarbon's old 0.375."""

    enabled: bool = True
    """Whether discovery may fall back to this estimate at all."""

    def __post_init__(self) -> None:
        """Reject values no hardware has.

        Raises:
            ConfigError: A constant is out of its plausible range.
        """
        if self.cpu_tdp_w is not None and not 0 < self.cpu_tdp_w <= 2000:
            raise ConfigError(f"cpu_tdp_w={self.cpu_tdp_w}: give the CPUs' TDP in watts (0-2000)")
        if not 0 < self.cpu_w_per_thread <= 50:
            raise ConfigError(f"cpu_w_per_thread={self.cpu_w_per_thread}: expected 0-50 W per logical CPU")
        if not 0 <= self.cpu_idle_fraction < 1:
            raise ConfigError(f"cpu_idle_fraction={self.cpu_idle_fraction}: expected a fraction in [0, 1)")
        if not 0 < self.dram_w_per_gb <= _MAX_DRAM_W_PER_GB:
            raise ConfigError(
                f"dram_w_per_gb={self.dram_w_per_gb}: expected 0-{_MAX_DRAM_W_PER_GB} W/GB "
                "(measured DDR4 draws about 0.06)"
            )

    def with_cpu_tdp_w(self, cpu_tdp_w: float | None) -> EstimateConfig:
        """A copy with another CPU TDP (validated)."""
        return dataclasses.replace(self, cpu_tdp_w=cpu_tdp_w)


class CpuUtilisation:
    """Busy percentage of the job's CPUs since the previous call (since boot on the first).

    Keeps its own baseline of /proc/stat times, unlike ``psutil.cpu_percent``, whose
    shared baseline any other caller in the process would reset.
    """

    def __init__(self) -> None:
        self._last: dict[int, tuple[float, float]] = {}

    def __call__(self) -> float:
        """Percent 0-100 averaged over the CPUs in this process's affinity set."""
        times = psutil.cpu_times(percpu=True)
        busy = total = 0.0
        for cpu in _job_cpus():
            if cpu >= len(times):
                continue
            now_total = sum(times[cpu])
            now_idle = times[cpu].idle + getattr(times[cpu], "iowait", 0.0)
            last_total, last_idle = self._last.get(cpu, (0.0, 0.0))
            self._last[cpu] = (now_total, now_idle)
            total += now_total - last_total
            busy += (now_total - last_total) - (now_idle - last_idle)
        return 100.0 * busy / total if total > 0 else 0.0


def job_memory_bytes() -> int:
    """The job's memory: the cgroup limit (v2 or v1) when below the installed RAM, else the RAM."""
    installed = int(psutil.virtual_memory().total)
    for path in _CGROUP_MEMORY_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            return min(installed, int(text))
    return installed


def _job_cpus() -> list[int]:
    """CPUs this process may run on (a Slurm cpuset or container share), else all."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


class EstimateSensor:
    """Estimated CPU and DRAM power (Source.ESTIMATED) from utilisation and memory size.

    Args:
        config: The model's constants.
        cpu_percent: Busy percentage of the job's CPUs since the last call.
        memory_bytes: The job's memory in bytes.
        cpu_count: Logical CPUs the job may use (for the per-thread TDP).
        kinds: Which devices to offer (discovery drops the ones RAPL measures).
        utilisation_period_s: How often the CPU utilisation is read (per-CPU times through psutil
            cost ~0.9 % of a core at 40 Hz); reads in between repeat the last estimate.
    """

    def __init__(
        self,
        config: EstimateConfig | None = None,
        cpu_percent: Callable[[], float] | None = None,
        memory_bytes: Callable[[], int] = job_memory_bytes,
        cpu_count: Callable[[], int] = lambda: len(_job_cpus()),
        kinds: Collection[Kind] = (Kind.CPU, Kind.DRAM),
        utilisation_period_s: float = 1.0,
    ) -> None:
        if not utilisation_period_s >= 0:
            raise ConfigError(f"utilisation_period_s must be >= 0, got {utilisation_period_s}; try 1.0")
        self._config = config or EstimateConfig()
        self._utilisation_period_s = utilisation_period_s
        self._cpu: tuple[float, float, float] | None = None  # (made_s, utilisation, power_w)
        self._cpu_percent = cpu_percent or CpuUtilisation()
        self._memory_bytes = memory_bytes
        self._cpu_count = cpu_count
        self._kinds = frozenset(kinds)
        self._tdp_w: float | None = None
        self._dram_w: float | None = None

    def devices(self) -> list[DeviceInfo]:
        """One estimated CPU and one estimated DRAM device (of those asked for), naming their assumptions."""
        config, found = self._config, []
        if Kind.CPU in self._kinds:
            tdp_w = self._cpu_tdp_w()
            basis = (
                "configured"
                if config.cpu_tdp_w is not None
                else f"{config.cpu_w_per_thread:g} W x {self._cpu_count()} logical CPUs, "
                "Cloud Carbon Footprint's per-vCPU max"
            )
            found.append(
                DeviceInfo(
                    uuid=CPU_UUID,
                    name="CPU (estimated)",
                    kind=Kind.CPU,
                    source=Source.ESTIMATED,
                    has_counter=False,
                    power_limit_w=tdp_w,
                    note=f"estimated: utilisation x {tdp_w:g} W TDP ({basis}), "
                    f"{config.cpu_idle_fraction:.0%} of it at idle; no sensor",
                )
            )
        if Kind.DRAM in self._kinds:
            memory_gb = self._memory_bytes() / _GB
            found.append(
                DeviceInfo(
                    uuid=DRAM_UUID,
                    name="DRAM (estimated)",
                    kind=Kind.DRAM,
                    source=Source.ESTIMATED,
                    has_counter=False,
                    note=f"estimated: {config.dram_w_per_gb:g} W/GB x {memory_gb:.1f} GB of the job's memory "
                    "(Tailpipe's DDR4 measurements); no sensor",
                )
            )
        return found

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """Estimated power of `device` now: utilisation since the last CPU read, or memory size."""
        if device.uuid == CPU_UUID:
            cpu = self._cpu
            due_s = None if cpu is None else self._next_estimate_s(cpu[0])  # the next estimate
            if cpu is None or due_s is None or t_s >= due_s:
                utilisation = min(max(self._cpu_percent(), 0.0), 100.0)
                idle = self._config.cpu_idle_fraction
                power_w = self._cpu_tdp_w() * (idle + (1.0 - idle) * utilisation / 100.0)
                cpu = self._cpu = (t_s, utilisation, power_w)
                due_s = self._next_estimate_s(t_s)
            since_s, utilisation, power_w = cpu
            # power_t_s: when the estimate was made (it covers the time before), so the integrator
            # integrates it as it does a GPU's publications; nothing new before the next one is due
            return Reading(
                device=device.uuid,
                t_s=t_s,
                power_w=power_w,
                utilisation_pct=utilisation,
                power_t_s=since_s,
                next_read_s=due_s,
            )
        if device.uuid != DRAM_UUID:
            raise SensorError(f"{device.uuid} is not an estimated device")
        if self._dram_w is None:  # the memory size is read once, not 40 times a second
            self._dram_w = self._config.dram_w_per_gb * self._memory_bytes() / _GB
        # a constant: one "publication" per utilisation period, like the CPU's
        period_s = self._utilisation_period_s
        since_s = period_s * math.floor(t_s / period_s) if period_s else t_s
        return Reading(
            device=device.uuid,
            t_s=t_s,
            power_w=self._dram_w,
            power_t_s=since_s,
            next_read_s=self._next_estimate_s(t_s),
        )

    def _next_estimate_s(self, t_s: float) -> float | None:
        """The next multiple of the utilisation period after `t_s` (None: read on every call).

        The CPU's and the DRAM's estimates fall due together on this grid, so a sampler
        wakes once a second for both, not twice.
        """
        period_s = self._utilisation_period_s
        return period_s * (math.floor(t_s / period_s) + 1) if period_s else None

    def close(self) -> None:
        """Nothing to release."""

    def _cpu_tdp_w(self) -> float:
        if self._tdp_w is None:
            config = self._config
            self._tdp_w = config.cpu_tdp_w or config.cpu_w_per_thread * self._cpu_count()
        return self._tdp_w
