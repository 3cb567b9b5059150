"""CPU and DRAM energy from the Linux powercap tree (RAPL; Intel and AMD alike).

The kernel lists every RAPL zone under /sys/class/powercap as ``intel-rapl:N``
(top level: ``package-N``, sometimes ``psys``) and ``intel-rapl:N:M`` (inside
package N: ``core``, ``uncore``, ``dram``). AMD's RAPL goes through the same
driver and names, and has no DRAM zone. Each zone's ``energy_uj`` is a
cumulative counter that wraps at ``max_energy_range_uj`` (a 32-bit MSR at load
wraps within minutes); the sensor reports it raw and declares the range, and
the integrator turns a backwards step into a wrap.

Only package and dram zones are measured: core and uncore are parts of their
package (adding them counts the same joules twice), and psys covers the whole
SoC, overlapping the packages. ``intel-rapl-mmio:N`` is the same package read
through MMIO on recent Intel parts: used only when the MSR zone is missing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from wattlog.errors import SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.types import DeviceInfo, Reading

_ZONE = re.compile(r"^(intel-rapl(?:-mmio)?):(\d+)(?::(\d+))?$")
_UUID_PREFIX = "rapl:"


def _read_text(path: Path) -> str:
    return path.read_text()


class PowercapSensor:
    """RAPL package and DRAM energy counters read from a sysfs-shaped tree.

    Args:
        root: The powercap class directory (a temp tree in tests).
        read_text: Reads one sysfs file; injected so tests can deny access even as root.
    """

    def __init__(
        self,
        root: Path = Path("/sys/class/powercap"),
        read_text: Callable[[Path], str] = _read_text,
    ) -> None:
        self._root = root
        self._read_text = read_text

    def is_available(self) -> bool:
        """Whether the tree has any RAPL zone (lists a directory; reads no counter)."""
        return self._root.is_dir() and any(_ZONE.match(entry.name) for entry in self._root.iterdir())

    def devices(self) -> list[DeviceInfo]:
        """The package (cpu) and dram zones, each probed once so a permission problem shows now.

        Raises:
            SensorUnavailable: No tree, no usable zone, or energy_uj not readable (with the fix).
        """
        if not self._root.is_dir():
            raise SensorUnavailable(
                f"no RAPL powercap tree at {self._root} (virtual machines rarely expose one; "
                "on bare metal load the intel_rapl_msr module)"
            )
        zones = sorted(
            (match for entry in self._root.iterdir() if (match := _ZONE.match(entry.name))),
            key=lambda m: (m[1] != "intel-rapl", int(m[2]), int(m[3] or -1)),
        )
        seen: dict[str, str] = {}  # package number -> its name ("package-0"); "msr:N" once read by MSR
        found: list[DeviceInfo] = []
        for zone in zones:
            kind, name = self._classify(zone, seen)
            if kind is not None:
                found.append(self._device(zone[0], kind, name))
        if not found:
            raise SensorUnavailable(f"no RAPL package or dram zone under {self._root}")
        return found

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """The zone's raw counter in millijoules (not unwrapped: see the module docstring).

        Raises:
            SensorError: The counter could not be read.
        """
        path = self._root / device.uuid.removeprefix(_UUID_PREFIX) / "energy_uj"
        try:
            energy_uj = int(self._read_text(path))
        except PermissionError as error:
            raise SensorUnavailable(_permission_message(path)) from error
        except (OSError, ValueError) as error:
            raise SensorError(f"cannot read {path}: {error}") from error
        return Reading(device=device.uuid, t_s=t_s, energy_mj=energy_uj / 1000.0)

    def close(self) -> None:
        """Nothing to release: every read opens and closes its file."""

    def _classify(self, zone: re.Match[str], seen: dict[str, str]) -> tuple[Kind | None, str]:
        """Kind and display name of a zone, or (None, name) for a zone not measured."""
        name = (self._optional_text(self._root / zone[0] / "name") or "").strip()
        mmio, package, sub = zone[1] != "intel-rapl", zone[2], zone[3]
        if mmio and f"msr:{package}" in seen:
            return None, name  # the same package read through MMIO: counting both doubles it
        if sub is None and name.startswith("package-"):
            seen[package] = name
            if not mmio:
                seen[f"msr:{package}"] = name
            return Kind.CPU, name
        if name == "dram":  # a package's subzone, or top level on some servers
            return Kind.DRAM, "dram" if sub is None else f"{seen.get(package, f'package-{package}')}/dram"
        return None, name  # core/uncore (inside the package) and psys (overlaps): skipped

    def _device(self, zone: str, kind: Kind, name: str) -> DeviceInfo:
        folder = self._root / zone
        try:
            self._read_text(folder / "energy_uj")
        except PermissionError as error:
            raise SensorUnavailable(_permission_message(folder / "energy_uj")) from error
        except OSError as error:  # e.g. ENODATA on a disabled zone
            raise SensorUnavailable(f"cannot read {folder / 'energy_uj'}: {error}") from error
        range_uj = self._optional_int(folder / "max_energy_range_uj")
        limit_uw = self._optional_int(folder / "constraint_0_power_limit_uw")
        return DeviceInfo(
            uuid=f"{_UUID_PREFIX}{zone}",
            name=name,
            kind=kind,
            source=Source.COUNTER,
            has_counter=True,
            counter_range_mj=range_uj / 1000.0 if range_uj else None,
            power_limit_w=limit_uw / 1e6 if limit_uw else None,
            note="RAPL energy_uj"
            + ("; core/uncore subzones are inside it, not added" if kind is Kind.CPU else ""),
        )

    def _optional_text(self, path: Path) -> str | None:
        try:
            return self._read_text(path)
        except OSError:
            return None

    def _optional_int(self, path: Path) -> int | None:
        text = self._optional_text(path)
        return int(text) if text and text.strip().isdigit() else None


def _permission_message(path: Path) -> str:
    zones = path.parent.parent
    return (
        f"permission denied reading {path}: RAPL counters are root-only since CVE-2020-8694; "
        f"run as root or grant read access: `sudo chmod o+r {zones}/intel-rapl:*/energy_uj` "
        "(until reboot; a udev rule makes it last)"
    )
