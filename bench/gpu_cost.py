"""For bench.gpu_check: the cadence of the field timestamps, and the agent's cost to a training step.

- StampSink: the driver's timestamps of field 186 and field 83 as wattlog's NVIDIA
  backend hands them on (Reading.power_t_s, energy_t_s), read every few ms under
  load: how often each field publishes, how old a value is when read, and how
  many reads repeat a publication (at 25 ms, ~3 of 4 on A100/H100).
- agent_step_ratio: the load's step (a matmul and a device sync) timed in
  interleaved blocks without and with a running wattlog Agent sampling the GPU
  every 25 ms (A-B, B-A, so drift in the machine's state hits both arms).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.types import Reading


@dataclass
class StampSink:
    """Distinct driver timestamps per field, and the age of each value when read (a ReadingSink)."""

    power_s: list[float] = field(default_factory=list)
    energy_s: list[float] = field(default_factory=list)
    ages_s: list[float] = field(default_factory=list)
    reads: int = 0
    failures: int = 0

    def add(self, reading: Reading) -> None:
        """See :class:`~wattlog.telemetry.sampler.ReadingSink`."""
        self.reads += 1
        if reading.power_t_s is not None:
            if not self.power_s or reading.power_t_s != self.power_s[-1]:
                self.power_s.append(reading.power_t_s)
            self.ages_s.append(reading.t_s - reading.power_t_s)
        if reading.energy_t_s is not None and (not self.energy_s or reading.energy_t_s != self.energy_s[-1]):
            self.energy_s.append(reading.energy_t_s)

    def record_failure(self, device_uuid: str, t_s: float, reason: str, lost: bool) -> None:
        """See :class:`~wattlog.telemetry.sampler.ReadingSink`."""
        self.failures += 1

    def cadence(self) -> dict[str, Any]:
        """Per field: publications, median/p10/p90 interval (ms); reads per publication; age of values."""
        out: dict[str, Any] = {"reads": self.reads, "failures": self.failures}
        for name, stamps in (("field 186 (power)", self.power_s), ("field 83 (energy)", self.energy_s)):
            gaps = sorted(b - a for a, b in zip(stamps, stamps[1:], strict=False))
            out[name] = {
                "publications": len(stamps),
                "median_ms": 1e3 * statistics.median(gaps) if gaps else None,
                "p10_ms": 1e3 * gaps[len(gaps) // 10] if gaps else None,
                "p90_ms": 1e3 * gaps[(9 * len(gaps)) // 10] if gaps else None,
            }
        out["reads_per_publication"] = self.reads / len(self.power_s) if self.power_s else None
        out["age_median_ms"] = 1e3 * statistics.median(self.ages_s) if self.ages_s else None
        return out


@dataclass
class Tee:
    """Hands every reading and failure to each sink."""

    sinks: list[Any]

    def add(self, reading: Reading) -> None:
        """See :class:`~wattlog.telemetry.sampler.ReadingSink`."""
        for sink in self.sinks:
            sink.add(reading)

    def record_failure(self, device_uuid: str, t_s: float, reason: str, lost: bool) -> None:
        """See :class:`~wattlog.telemetry.sampler.ReadingSink`."""
        for sink in self.sinks:
            sink.record_failure(device_uuid, t_s, reason, lost)


def agent_step_ratio(
    step: Callable[[], None],
    nvml: Any,
    uuid: str,
    *,
    rounds: int = 4,
    block_s: float = 2.0,
    period_s: float = 0.025,
    timer: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Median step time without and with an agent sampling GPU `uuid` every `period_s`; their ratio.

    The agent is started and closed outside the timed blocks; each block runs
    `step` for `block_s` of `timer` time.
    """
    lock_dir = Path(tempfile.mkdtemp(prefix="wattlog-gpu-check-locks-"))
    plain: list[float] = []
    agent: list[float] = []

    def block() -> float:
        steps, start = 0, timer()
        while timer() - start < block_s:
            step()
            steps += 1
        return (timer() - start) / steps

    block()  # warm-up
    for i in range(rounds):
        for arm in ("plain", "agent") if i % 2 == 0 else ("agent", "plain"):
            if arm == "plain":
                plain.append(block())
                continue
            sensor = NvmlSensor(nvml, include=lambda _index, u: u == uuid)
            config = AgentConfig(
                port=None, period_s=period_s, flush_s=3600.0, host="gpu-check", lock_dir=lock_dir
            )
            with Agent(config, sensors=[sensor]):
                agent.append(block())
    p, a = statistics.median(plain), statistics.median(agent)
    return {
        "period_s": period_s,
        "rounds": rounds,
        "block_s": block_s,
        "plain_step_ms": 1e3 * p,
        "agent_step_ms": 1e3 * a,
        "ratio": a / p,
        "plain_ms": [1e3 * x for x in plain],
        "agent_ms": [1e3 * x for x in agent],
    }
