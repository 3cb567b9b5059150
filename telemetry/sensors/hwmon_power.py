"""CPU power of Grace superchips from the ACPI power meters the kernel lists under /sys/class/hwmon.

Grace has no RAPL: its power is published by ACPI 4.0 power meters (kernel
driver `acpi_power_meter`, hwmon name ``power_meter``), each ``powerN_average``
in microwatts, averaged over ``powerN_average_interval`` ms, and named by the
firmware in ``powerN_oem_info`` (Documentation/hwmon/acpi_power_meter.rst). A
meter that exposes ``powerN_input`` instead (microwatts, the hwmon sysfs ABI's
instantaneous power, Documentation/hwmon/sysfs-interface.rst) is read from it,
and its note says so: never ignored without a word. On
Grace superchips the names say what each meter covers: "Grace Power Socket N"
(the CPU socket), "CPU Power Socket N" (its CPU rail; taken to overlap the
former, so the two are never summed), "SysIO Power Socket N" and "Module Power
Socket N" (the whole superchip module, GPU included).

Boundaries, so nothing is counted twice: a socket's Grace meter is measured as
its CPU (the CPU rail only where no Grace meter names the socket); the module
meter overlaps the GPU that NVML measures and is never summed with it, and
SysIO is not CPU power: both are listed in `skipped`, not measured.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

from wattlog.errors import SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.types import DeviceInfo, Reading

_METER = "power_meter"
_SOCKET = re.compile(r"^(grace|cpu|sysio|module) power socket (\d+)$", re.IGNORECASE)
_PREFIX = "hwmon:"
HWMON_ROOT = Path("/sys/class/hwmon")
HWMON_ROOT_ENV = "WATTLOG_HWMON_ROOT"
"""The environment variable naming another hwmon tree (a container's bind mount, a test tree)."""


def hwmon_root(environ: Mapping[str, str], given: Path | None = None) -> Path:
    """The hwmon tree to read: `given` (a CLI option), else $WATTLOG_HWMON_ROOT, else /sys/class/hwmon."""
    if given is not None:
        return given
    return Path(environ[HWMON_ROOT_ENV]) if environ.get(HWMON_ROOT_ENV) else HWMON_ROOT


def _read_text(path: Path) -> str:
    return path.read_text()


class HwmonPowerSensor:
    """Grace CPU socket power from ACPI power meters in a sysfs-shaped hwmon tree.

    Args:
        root: The hwmon class directory (a temp tree in tests).
        read_text: Reads one sysfs file (injected for tests).
    """

    def __init__(self, root: Path = HWMON_ROOT, read_text: Callable[[Path], str] = _read_text) -> None:
        self._root = root
        self._read_text = read_text
        self._paths: dict[str, Path] = {}
        self.skipped: list[str] = []

    def is_available(self) -> bool:
        """Whether an ACPI power meter here names a Grace superchip's power socket (reads only names)."""
        return any(_SOCKET.match(info) for info, _ in self._meters())

    def _meters(self) -> list[tuple[str, Path]]:
        """(oem_info, powerN_average path) of every ACPI power meter reading."""
        if not self._root.is_dir():
            return []
        found = []
        for hwmon in sorted(self._root.iterdir()):
            try:
                if self._read_text(hwmon / "name").strip() != _METER:
                    continue
            except OSError:
                continue
            for folder in (hwmon, hwmon / "device"):  # the driver puts its files on the ACPI device
                found.extend(self._readings(folder))
        return found

    def _readings(self, folder: Path) -> list[tuple[str, Path]]:
        """(oem_info, the file to read) of each meter in `folder`: powerN_average, else powerN_input."""
        out = []
        for info in sorted(folder.glob("power*_oem_info")):
            stem = info.name.removesuffix("_oem_info")
            value = next(
                (f for f in (folder / f"{stem}_average", folder / f"{stem}_input") if f.exists()), None
            )
            if value is None:
                continue
            try:
                out.append((self._read_text(info).strip(), value))
            except OSError:
                continue
        return out

    def devices(self) -> list[DeviceInfo]:
        """One CPU device per Grace socket; module and SysIO meters are skipped (see the module docstring).

        Raises:
            SensorUnavailable: No ACPI power meter names a Grace or CPU power socket.
        """
        sockets: dict[int, tuple[str, str, Path]] = {}  # socket -> (what, oem_info, path), Grace first
        self.skipped = []
        for info, path in self._meters():
            match = _SOCKET.match(info)
            if match is None:
                continue
            what, socket = match[1].lower(), int(match[2])
            if what in ("module", "sysio"):
                self.skipped.append(f"{info}: not CPU power (the module includes the GPU): not summed")
            elif what == "grace" or socket not in sockets:
                sockets[socket] = (what, info, path)
        if not sockets:
            raise SensorUnavailable(
                f"no ACPI power meter names a Grace or CPU power socket under {self._root}"
            )
        found = []
        for socket, (what, info, path) in sorted(sockets.items()):
            uuid = f"{_PREFIX}{info.lower().replace(' ', '-')}"
            self._paths[uuid] = path
            scope = (
                "the Grace socket" if what == "grace" else "the CPU rail only (no Grace meter on this socket)"
            )
            how = "averaged by the firmware" if path.name.endswith("_average") else "its instantaneous input"
            note = f"power from ACPI power meter {path.name} ({info}: {scope}), {how}"
            found.append(
                DeviceInfo(uuid, f"Grace socket {socket}", Kind.CPU, Source.SAMPLED, False, note=note)
            )
        return found

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """The socket's average power now.

        Raises:
            SensorError: The meter could not be read or did not hold a number.
        """
        path = self._paths.get(device.uuid)
        if path is None:
            raise SensorError(f"{device.uuid} is not one of this sensor's meters (call devices() first)")
        try:
            microwatts = int(self._read_text(path).strip())
        except (OSError, ValueError) as e:
            raise SensorError(f"{device.uuid}: cannot read {path} ({e})") from e
        return Reading(device.uuid, t_s, power_w=microwatts / 1e6)

    def close(self) -> None:
        """Nothing to release."""
