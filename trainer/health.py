"""Pre-flight device health check: multiply two matrices, compare, time, and ask NVML.

A device passes when its product matches a float64 CPU reference, it is not
far slower than its peers, and NVML (where present) reports it clean and
idle. :func:`exit_code` turns results into what a scheduler needs to cordon a
host. Runs on the CPU when no GPU exists.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from wattlog.errors import ConfigError
from wattlog.trainer.gpuchecks import Check, Thresholds, load_nvml, nvml_checks

Matmul = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True, slots=True)
class HealthResult:
    """The health of one device.

    Attributes:
        device: torch device string (cpu, cuda:0).
        name: Device name.
        ok: Every check passed.
        tflops: Measured matmul throughput, TFLOP/s.
        seconds: Time of the timed multiplications, seconds.
        max_rel_error: Largest |result - reference| / max |reference|.
        checks: Every check with its detail.
        start_s: Unix time the check began.
        end_s: Unix time it ended.
    """

    device: str
    name: str
    ok: bool
    tflops: float
    seconds: float
    max_rel_error: float
    checks: tuple[Check, ...]
    start_s: float
    end_s: float

    @property
    def failures(self) -> list[Check]:
        """The checks that failed."""
        return [c for c in self.checks if not c.ok]

    def summary(self) -> str:
        """One line for the terminal and the ledger."""
        verdict = "ok" if self.ok else "FAIL: " + "; ".join(f"{c.name}: {c.detail}" for c in self.failures)
        speed = f"{self.tflops:.3f} TFLOP/s, error {self.max_rel_error:.1e}"
        return f"{self.device} ({self.name}): {speed}, {verdict}"

    def payload(self) -> dict[str, Any]:
        """The result as JSON-able data for a ledger event."""
        return {
            "device": self.device,
            "name": self.name,
            "ok": self.ok,
            "tflops": self.tflops,
            "seconds": self.seconds,
            "max_rel_error": self.max_rel_error,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "checks": [
                {"name": c.name, "ok": c.ok, "detail": c.detail, "skipped": c.skipped} for c in self.checks
            ],
        }


def resolve_device(spec: str) -> torch.device:
    """The torch device named `spec`, checked to exist.

    Raises:
        ConfigError: Malformed, or no such device on this machine.
    """
    try:
        device = torch.device(spec)
    except (RuntimeError, TypeError) as error:
        raise ConfigError(f"device {spec!r} is not a device name: use cpu or cuda:N") from error
    if device.type == "cpu":
        return device
    if device.type != "cuda":
        raise ConfigError(f"device {spec!r} is not supported by the health check: use cpu or cuda:N")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = device.index if device.index is not None else 0
    if index >= count:
        have = f"{count} CUDA device(s)" if count else "no CUDA device"
        raise ConfigError(f"device {spec} does not exist: this machine has {have}; use --device cpu")
    return torch.device("cuda", index)


def default_devices() -> list[str]:
    """Every CUDA device, or the CPU when there is none."""
    if torch.cuda.is_available() and torch.cuda.device_count():
        return [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return ["cpu"]


def health_check(
    device: str = "cpu",
    *,
    size: int | None = None,
    repeats: int = 3,
    tolerance: float = 1e-3,
    thresholds: Thresholds | None = None,
    nvml: Any = None,
    matmul: Matmul = torch.matmul,
    clock: Callable[[], float] = time.perf_counter,
    wall: Callable[[], float] = time.time,
) -> HealthResult:
    """Check one device.

    Args:
        device: cpu or cuda:N.
        size: Square matrix size (default 512 on CPU, 8192 on a GPU).
        repeats: Timed multiplications after one warm-up.
        tolerance: Largest relative error accepted against the float64 reference.
        thresholds: NVML bounds (idle memory, temperature).
        nvml: An initialised pynvml-like module; None loads pynvml on a GPU (skipped if absent).
        matmul: The multiplication under test (tests inject a wrong one).
        clock: Timer, seconds.
        wall: Unix time, seconds.

    Raises:
        ConfigError: The device does not exist or the arguments are out of range.
    """
    target = resolve_device(device)
    if repeats < 1 or not tolerance > 0:
        raise ConfigError(f"need repeats >= 1 and tolerance > 0, got {repeats} and {tolerance}")
    cuda = target.type == "cuda"
    n = size or (8192 if cuda else 512)
    start_s = wall()
    name, checks = _driver_checks(target, nvml, thresholds or Thresholds())
    error, seconds = _timed_matmul(target, n, repeats, matmul, clock)
    checks.insert(
        0, Check("matmul", error <= tolerance, f"relative error {error:.2e} (limit {tolerance:.0e})")
    )
    tflops = 2 * n**3 * repeats / seconds / 1e12 if seconds > 0 else float("inf")
    return HealthResult(
        device=str(target),
        name=name,
        ok=all(c.ok for c in checks),
        tflops=tflops,
        seconds=seconds,
        max_rel_error=error,
        checks=tuple(checks),
        start_s=start_s,
        end_s=wall(),
    )


def _driver_checks(target: torch.device, nvml: Any, thresholds: Thresholds) -> tuple[str, list[Check]]:
    """The device's name and its NVML checks (none on a CPU; one skipped check without NVML)."""
    if target.type != "cuda":
        return "CPU", []
    props = torch.cuda.get_device_properties(target)
    nvml = nvml if nvml is not None else load_nvml()
    if nvml is None:
        return props.name, [Check("nvml", True, "NVML not available: driver checks skipped", skipped=True)]
    uuid = getattr(props, "uuid", None)
    return props.name, nvml_checks(nvml, f"GPU-{uuid}" if uuid else None, target.index or 0, thresholds)


def _timed_matmul(
    target: torch.device, n: int, repeats: int, matmul: Matmul, clock: Callable[[], float]
) -> tuple[float, float]:
    """Relative error of `matmul` against a float64 reference, and seconds for `repeats` after a warm-up."""
    cuda = target.type == "cuda"
    generator = torch.Generator().manual_seed(1234)
    a = torch.randn(n, n, generator=generator)
    b = torch.randn(n, n, generator=generator)
    reference = a.double() @ b.double()
    a_dev, b_dev = a.to(target), b.to(target)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(target)

    result = matmul(a_dev, b_dev)
    sync()
    t0 = clock()
    for _ in range(repeats):
        result = matmul(a_dev, b_dev)
    sync()
    seconds = clock() - t0
    error = ((result.double().cpu() - reference).abs().max() / reference.abs().max()).item()
    return float(error), seconds


def compare_peers(results: Sequence[HealthResult], min_fraction: float = 0.8) -> list[HealthResult]:
    """Fail each device whose TFLOP/s is below `min_fraction` of the median of its peers (same name).

    Args:
        results: One result per device.
        min_fraction: Fraction of the peers' median below which a device fails.
    """
    if not 0 < min_fraction <= 1:
        raise ConfigError(f"min_fraction must be in (0, 1], got {min_fraction}")
    out = []
    for result in results:
        peers = [r.tflops for r in results if r.name == result.name and r is not result]
        if not peers:
            out.append(result)
            continue
        median = statistics.median(peers)
        ok = result.tflops >= min_fraction * median
        check = Check("peers", ok, f"{result.tflops:.3f} TFLOP/s vs peers' median {median:.3f}")
        out.append(replace(result, ok=result.ok and ok, checks=(*result.checks, check)))
    return out


def exit_code(results: Sequence[HealthResult]) -> int:
    """0 when every device is healthy, 1 otherwise (a scheduler cordons the host)."""
    return 0 if results and all(r.ok for r in results) else 1
