"""The checks a clean GPU must pass before a job, read from NVML where it reports them.

No stray compute processes, idle memory and temperature below thresholds, no
pending ECC page retirement or row remapping, no uncorrected volatile ECC
errors. XID errors reach NVML only as events raised after a listener
registers, so past XIDs cannot be read here: the result says so rather than
claiming a pass.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from wattlog.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Check:
    """One pre-flight check.

    Attributes:
        name: What was checked (matmul, processes, memory, temperature, ecc, xid, peers, ...).
        ok: Whether it passed (a check that could not run passes with `skipped`).
        detail: One line: the value and the bound.
        skipped: The check could not run here (no NVML, not supported).
    """

    name: str
    ok: bool
    detail: str
    skipped: bool = False


@dataclass
class Thresholds:
    """Bounds of a clean, idle GPU."""

    max_memory_used_bytes: int = 1 << 30
    """Memory in use by others before the job starts (1 GiB)."""
    max_temperature_c: float = 80.0
    """GPU temperature while idle."""

    def __post_init__(self) -> None:
        """Validate the bounds."""
        if self.max_memory_used_bytes < 0 or not self.max_temperature_c > 0:
            raise ConfigError("thresholds must be positive (memory bytes >= 0, temperature > 0 C)")


def load_nvml() -> ModuleType | None:
    """pynvml, initialised, or None when no driver is present."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no library, no driver, no permission: the checks are skipped
        return None
    module: ModuleType = pynvml
    return module


def nvml_checks(nvml: Any, uuid: str | None, index: int, thresholds: Thresholds) -> list[Check]:
    """Run the NVML checks on one GPU, found by UUID (or by index when the UUID is unknown).

    Args:
        nvml: An initialised pynvml-compatible module.
        uuid: The GPU's UUID as NVML spells it ("GPU-..."), if known.
        index: The NVML index to use without a UUID.
        thresholds: Bounds for memory and temperature.

    Returns:
        One Check per item; a metric the device does not offer is a skipped check.
    """
    handle = nvml.nvmlDeviceGetHandleByUUID(uuid) if uuid else nvml.nvmlDeviceGetHandleByIndex(index)
    checks = []
    for name, probe in _PROBES:
        try:
            checks.append(probe(nvml, handle, thresholds))
        except Exception as error:  # NVMLError_NotSupported and friends
            checks.append(Check(name, True, f"not reported: {type(error).__name__}", skipped=True))
    checks.append(Check("xid", True, "past XID errors are not readable through NVML", skipped=True))
    return checks


def _processes(nvml: Any, handle: Any, thresholds: Thresholds) -> Check:
    mine = os.getpid()
    others = [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle) if p.pid != mine]
    return Check("processes", not others, f"stray compute processes: {others}" if others else "none")


def _memory(nvml: Any, handle: Any, thresholds: Thresholds) -> Check:
    used = int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
    limit = thresholds.max_memory_used_bytes
    return Check("memory", used <= limit, f"{used / 2**20:.0f} MiB in use (limit {limit / 2**20:.0f} MiB)")


def _temperature(nvml: Any, handle: Any, thresholds: Thresholds) -> Check:
    temp = float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
    limit = thresholds.max_temperature_c
    return Check("temperature", temp <= limit, f"{temp:.0f} C (limit {limit:.0f} C)")


def _ecc(nvml: Any, handle: Any, thresholds: Thresholds) -> Check:
    uncorrected = int(
        nvml.nvmlDeviceGetTotalEccErrors(
            handle, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC
        )
    )
    return Check("ecc", uncorrected == 0, f"{uncorrected} uncorrected volatile ECC errors")


def _remap(nvml: Any, handle: Any, thresholds: Thresholds) -> Check:
    _, _, pending, failed = nvml.nvmlDeviceGetRemappedRows(handle)
    ok = not pending and not failed
    return Check("row_remap", ok, "clean" if ok else f"remap pending={bool(pending)} failed={bool(failed)}")


def _retired(nvml: Any, handle: Any, thresholds: Thresholds) -> Check:
    pending = int(nvml.nvmlDeviceGetRetiredPagesPendingStatus(handle))
    return Check("page_retirement", not pending, "pending: reset the GPU" if pending else "none pending")


_PROBES: tuple[tuple[str, Callable[[Any, Any, Thresholds], Check]], ...] = (
    ("processes", _processes),
    ("memory", _memory),
    ("temperature", _temperature),
    ("ecc", _ecc),
    ("row_remap", _remap),
    ("page_retirement", _retired),
)
"""Each NVML check in the order reported; one the device does not offer becomes a skipped check."""
