# ruff: noqa: N802 - the functions keep amdsmi's names
"""An amdsmi-compatible stand-in over simulated GPUs, with the faults AMD's sensor is known for.

The real `amdsmi` (PyPI) loads ROCm's libamd_smi.so at import, so it cannot run
without ROCm; this module has its names, dictionary keys and units, so the AMD
backend (and any amdsmi client) runs unchanged on a simulated trace. What it
follows, and where AMD publishes it:

- amdsmi_get_energy_count returns {"energy_accumulator" (key "power" before amdsmi
  6.2.1), "counter_resolution", "timestamp"} (ROCm/amdsmi py-interface/README.md and
  amdsmi_interface.py). The resolution is read into a `ctypes.c_float`
  (amdsmi_interface.py: `counter_resolution = ctypes.c_float()`), so Python sees the
  float32 nearest 15.259 uJ (15.258999824523926), never exactly 15.259; ROCm's SMI
  code hard-codes 15.3 uJ elsewhere (a 0.27 % scale difference; `AmdFaults.counter_scale`).
  The timestamp (ns) is the driver's boot-time clock taken at each read: a new value on
  every call, whether the accumulator moved or not, so it says nothing of the counter's
  own update times (a stale accumulator looks fresh).
- amdsmi_get_power_info: amdsmi_power_info_t (ROCm docs 7.1, "Unsupported struct members
  are set to UINT32_MAX"; the Python layer gives "N/A" for them): `socket_power`,
  `current_socket_power` (W, MI300+), `average_socket_power` (W, MI200 and older: "N/A"
  on MI300), the voltages, and `power_limit` in W.
- amdsmi_get_power_cap_info: microwatts.
- amdsmi_get_gpu_enumeration_info: the HIP index of each amdsmi handle; the function
  exists only from ROCm 6.4 (`AmdFaults.no_enumeration`: the module lacks it).
- errors: AmdSmiLibraryException carrying amdsmi's status code (2: NOT_SUPPORTED).

Faults (`AmdFaults`) reproduce the public record: a counter that runs backwards
(ROCm/amdsmi #115), impossible values (#38: a jump of terawatt-hours), power that
is "N/A", the energy counter refused on a VM guest, HIP order unlike amdsmi's,
a counter on another scale than power (what Zeus's start-up check catches), and an
accumulator that stops for a while and then catches up (`stale_from_s`).
Every figure read through it is labelled `simulated` by the backend.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wattlog.clock import Clock
from wattlog.telemetry.sensors.simulated import SimulatedGpu

STATUS_NOT_SUPPORTED = 2
"""amdsmi_wrapper.AMDSMI_STATUS_NOT_SUPPORTED."""
STATUS_NOT_FOUND = 31
"""amdsmi_wrapper.AMDSMI_STATUS_NOT_FOUND (a device that fell off the bus)."""
COUNTER_RESOLUTION_UJ: float = struct.unpack("f", struct.pack("f", 15.259))[0]
"""Microjoules per count of the energy accumulator: 15.259 as the float32 amdsmi reads it into."""
ROCM_SMI_RESOLUTION_UJ = 15.3
"""The resolution ROCm's SMI code hard-codes (0.27 % above the float32 15.259)."""
BOOT_S = 1000.0
"""How long the simulated machine had been up when the clock read 0 (the timestamps' origin)."""
NA = "N/A"


class AmdSmiException(Exception):  # noqa: N818 - amdsmi's own name
    """amdsmi's base exception."""


class AmdSmiLibraryException(AmdSmiException):
    """An error of the library, with amdsmi's status code."""

    def __init__(self, err_code: int, err_info: str = "") -> None:
        super().__init__(f"amdsmi error {err_code}: {err_info}")
        self.err_code = err_code
        self.err_info = err_info

    def get_error_code(self) -> int:
        """amdsmi's status code."""
        return self.err_code

    def get_error_info(self) -> str:
        """amdsmi's text for it."""
        return self.err_info


@dataclass(frozen=True)
class AmdFaults:
    """Which of AMD's published sensor faults the stand-in shows (all off by default).

    Attributes:
        backwards_at_s: From this time the accumulator reads `backwards_counts` lower (#115).
        backwards_counts: How far back it steps, counts.
        jump_at_s: From this time the accumulator is `jump_counts` higher (#38, impossible values).
        jump_counts: The size of that jump, counts.
        power_na: current_socket_power is `na_value` (only average_socket_power answers).
        na_value: How an unsupported field reads: "N/A" (Python binding) or UINT32_MAX (the C struct).
        vm_guest: amdsmi_get_energy_count answers NOT_SUPPORTED, as on a VM guest.
        old_key: The accumulator comes under "power" (amdsmi before 6.2.1).
        counter_scale: The accumulator counts this many times the true energy (1: right).
        hip_order: hip_order[i] is the HIP index of amdsmi handle i (default: the same).
        no_enumeration: amdsmi_get_gpu_enumeration_info is missing (ROCm before 6.4).
        stale_from_s: From this time the accumulator holds its value for `stale_s`, then shows the
            true count again (its catch-up); the timestamp stays new at every read, as AMD's does.
        stale_s: How long it holds, seconds.
    """

    backwards_at_s: float | None = None
    backwards_counts: int = 10**8
    jump_at_s: float | None = None
    jump_counts: int = 2**62
    power_na: bool = False
    na_value: object = NA
    vm_guest: bool = False
    old_key: bool = False
    counter_scale: float = 1.0
    hip_order: Sequence[int] | None = None
    no_enumeration: bool = False
    stale_from_s: float | None = None
    stale_s: float = 5.0


@dataclass(frozen=True, slots=True)
class _Handle:
    """An opaque processor handle, as amdsmi_get_processor_handles returns."""

    index: int


class FakeAmdSmi:
    """Simulated GPUs behind amdsmi's function names, keys and units.

    Args:
        gpus: The GPUs, in amdsmi's handle order.
        clock: Time source; readings are taken at clock.monotonic().
        faults: The faults to show.
    """

    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException
    wattlog_simulated = True

    def __init__(self, gpus: Sequence[SimulatedGpu], clock: Clock, faults: AmdFaults | None = None) -> None:
        self.gpus = list(gpus)
        self.wattlog_clock = clock
        self.faults = faults or AmdFaults()
        self.initialised = False
        self.calls: Counter[str] = Counter()  # every call by name (identification included)
        if not self.faults.no_enumeration:  # ROCm 6.4 added it; before, the module has no such function
            self.amdsmi_get_gpu_enumeration_info = self._enumeration_info

    def amdsmi_init(self, flags: int = 0) -> None:
        """Start the library."""
        self.initialised = True

    def amdsmi_shut_down(self) -> None:
        """Stop the library."""
        self.initialised = False

    def amdsmi_get_processor_handles(self) -> list[_Handle]:
        """One handle per GPU, in amdsmi's order."""
        self._ready()
        return [_Handle(i) for i in range(len(self.gpus))]

    def amdsmi_get_gpu_device_uuid(self, handle: _Handle) -> str:
        """The GPU's UUID (amdsmi's form, no prefix)."""
        return self._gpu(handle).uuid.removeprefix("GPU-")

    def amdsmi_get_gpu_asic_info(self, handle: _Handle) -> dict[str, Any]:
        """ASIC facts; the backend reads `market_name`."""
        return {"market_name": self._gpu(handle).name, "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]"}

    def _enumeration_info(self, handle: _Handle) -> dict[str, Any]:
        """amdsmi_get_gpu_enumeration_info: the HIP index of the handle (ROCm 6.4+)."""
        self._count("amdsmi_get_gpu_enumeration_info")
        order = self.faults.hip_order
        hip_id = order[handle.index] if order is not None else handle.index
        # HIP's UUID is not amdsmi's: "GPU-" and 16 hex digits
        return {"hip_id": hip_id, "hip_uuid": f"GPU-{handle.index + 1:016x}"}

    def amdsmi_get_power_info(self, handle: _Handle) -> dict[str, Any]:
        """Socket power in whole watts; "N/A" where the board does not report it.

        An MI300 reports current_socket_power and leaves average_socket_power "N/A"; with
        `power_na` it is the other way round (an MI200-like board).
        """
        self._count("amdsmi_get_power_info")
        gpu, now = self._gpu(handle), self._now(handle)
        na = self.faults.na_value
        current = na if self.faults.power_na else round(gpu.instant_power_w(now))
        average = round(gpu.average_power_w(now)) if self.faults.power_na else na
        return {
            "socket_power": na,
            "current_socket_power": current,
            "average_socket_power": average,
            "gfx_voltage": na,
            "soc_voltage": na,
            "mem_voltage": na,
            "power_limit": round(gpu.power_limit_w),
        }

    def amdsmi_get_power_cap_info(self, handle: _Handle) -> dict[str, Any]:
        """Power caps in microwatts."""
        self._count("amdsmi_get_power_cap_info")
        cap_uw = int(self._gpu(handle).power_limit_w * 1e6)
        return {"power_cap": cap_uw, "default_power_cap": cap_uw, "min_power_cap": 0, "max_power_cap": cap_uw}

    def amdsmi_get_energy_count(self, handle: _Handle) -> dict[str, Any]:
        """The accumulator (counts), its resolution (uJ per count, float32) and the boot-time clock (ns)."""
        self._count("amdsmi_get_energy_count")
        gpu, now = self._gpu(handle), self._now(handle)
        f = self.faults
        if f.vm_guest:
            raise AmdSmiLibraryException(STATUS_NOT_SUPPORTED, "energy count is not supported on a VM guest")
        shown = now
        if f.stale_from_s is not None and f.stale_from_s <= now < f.stale_from_s + f.stale_s:
            shown = f.stale_from_s  # the accumulator holds; the timestamp does not
        counts = int(gpu.energy_mj(shown) * 1e3 * f.counter_scale / COUNTER_RESOLUTION_UJ)
        if f.backwards_at_s is not None and now >= f.backwards_at_s:
            counts = max(counts - f.backwards_counts, 0)
        if f.jump_at_s is not None and now >= f.jump_at_s:
            counts += f.jump_counts
        key = "power" if f.old_key else "energy_accumulator"
        stamp_ns = int(round((BOOT_S + now) * 1e9))  # taken at this read, moved or not
        return {key: counts, "counter_resolution": COUNTER_RESOLUTION_UJ, "timestamp": stamp_ns}

    def amdsmi_get_gpu_activity(self, handle: _Handle) -> dict[str, Any]:
        """Engine activity, percent; mm_activity "N/A" as on Instinct boards."""
        self._count("amdsmi_get_gpu_activity")
        gpu, now = self._gpu(handle), self._now(handle)
        return {"gfx_activity": gpu.utilisation_pct(now), "umc_activity": NA, "mm_activity": NA}

    def amdsmi_get_gpu_vram_usage(self, handle: _Handle) -> dict[str, Any]:
        """VRAM in MB."""
        self._count("amdsmi_get_gpu_vram_usage")
        gpu = self._gpu(handle)
        return {"vram_used": gpu.memory_used_bytes // 2**20, "vram_total": gpu.memory_total_bytes // 2**20}

    def calls_per_gpu_per_s(self, seconds: float) -> float:
        """Calls counted since `calls` was last cleared, per GPU per second over `seconds`."""
        return self.calls.total() / max(len(self.gpus), 1) / seconds

    def _count(self, name: str) -> None:
        self.calls[name] += 1

    def _ready(self) -> None:
        if not self.initialised:
            raise AmdSmiLibraryException(32, "amdsmi_init was not called")  # AMDSMI_STATUS_NOT_INIT

    def _gpu(self, handle: _Handle) -> SimulatedGpu:
        self._ready()
        if not isinstance(handle, _Handle) or not 0 <= handle.index < len(self.gpus):
            raise AmdSmiLibraryException(1, f"invalid processor handle {handle!r}")  # AMDSMI_STATUS_INVAL
        return self.gpus[handle.index]

    def _now(self, handle: _Handle) -> float:
        now = self.wattlog_clock.monotonic()
        if self._gpu(handle).is_lost(now):
            raise AmdSmiLibraryException(STATUS_NOT_FOUND, "the GPU fell off the bus (simulated)")
        return now
