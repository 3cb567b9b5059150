"""Intel Gaudi power from `hl-smi`'s CSV, where the pyhlml binding does not install.

`hl-smi -Q index,uuid,name,power.draw,power.max,utilization.aip,memory.used
--format csv,noheader -l 1` prints one line per device every second, its
fastest rate (`-l` takes whole seconds; Intel Gaudi docs, "System Management
Interface Tool"): ``0, 01P4-HL3090A0-18-U4V193-22-07-00, HL-325L, 226 W, 850 W,
0 %, 672 MiB``. There is no energy counter here: power is sampled once a second
and integrated, labelled `sampled`, and each device's note names the rate. The
devices are listed by one plain query; the loop then runs in a child process
read by a thread, so a read never waits for hl-smi.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from wattlog.clock import Clock, SystemClock
from wattlog.errors import SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.sensors.profiles import board_profile
from wattlog.telemetry.types import DeviceInfo, Reading, Vendor

log = logging.getLogger(__name__)

QUERY = ("index", "uuid", "name", "power.draw", "power.max", "utilization.aip", "memory.used")
_UNITS = {"W": 1.0, "%": 1.0, "MiB": 2.0**20, "C": 1.0}


@dataclass(frozen=True, slots=True)
class HlSmiRow:
    """One device's line of hl-smi's CSV (None: "N/A" or unreadable)."""

    index: int
    uuid: str
    name: str
    power_w: float | None
    power_max_w: float | None
    utilisation_pct: float | None
    memory_used_bytes: float | None


def parse_line(line: str) -> HlSmiRow | None:
    """One CSV line in QUERY's order; None for a line that is not one (a header, a blank, a short row)."""
    parts = [part.strip() for part in line.split(",")]
    if len(parts) != len(QUERY) or not parts[0].isdigit():
        return None
    power, power_max, utilisation, memory = (_quantity(part) for part in parts[3:])
    return HlSmiRow(int(parts[0]), parts[1], parts[2], power, power_max, utilisation, memory)


def _quantity(text: str) -> float | None:
    """ "226 W" -> 226.0, "672 MiB" -> bytes, "N/A" -> None."""
    number, _, unit = text.partition(" ")
    try:
        return float(number) * _UNITS.get(unit.strip(), 1.0)
    except ValueError:
        return None


class HlSmiSensor:
    """Gaudi power from hl-smi's loop at `period_s` (whole seconds: its fastest is 1).

    Args:
        include: (module index, uuid) -> whether the device is the job's; None: all.
        clock: The sampler's clock (a line's arrival is its power's time).
        command: The hl-smi executable (and leading arguments; tests give a stand-in script).
        period_s: hl-smi's `-l` interval, whole seconds.
        run: subprocess.run-compatible (the device listing); popen: subprocess.Popen-compatible.
    """

    def __init__(
        self,
        include: Callable[[int, str], bool] | None = None,
        *,
        clock: Clock | None = None,
        command: Sequence[str] = ("hl-smi",),
        period_s: int = 1,
        run: Callable[..., Any] = subprocess.run,
        popen: Callable[..., Any] = subprocess.Popen,
    ) -> None:
        self._include = include
        self._clock = clock or SystemClock()
        self._args = [*command, "-Q", ",".join(QUERY), "--format", "csv,noheader"]
        self._period_s = max(int(period_s), 1)
        self._run, self._popen = run, popen
        self._latest: dict[str, tuple[HlSmiRow, float]] = {}
        self._lock = threading.Lock()
        self._process: Any = None
        self._thread: threading.Thread | None = None

    def devices(self) -> list[DeviceInfo]:
        """The job's devices from one hl-smi query; then starts the loop.

        Raises:
            SensorUnavailable: hl-smi is missing, fails, or lists no device.
        """
        try:
            done = self._run(self._args, capture_output=True, text=True, timeout=30, check=True)
        except (OSError, subprocess.SubprocessError) as e:
            raise SensorUnavailable(f"hl-smi could not list devices ({e}): not measuring Gaudi") from e
        rows = [row for line in done.stdout.splitlines() if (row := parse_line(line)) is not None]
        rows = [r for r in rows if self._include is None or self._include(r.index, r.uuid)]
        if not rows:
            return []
        self._start([r.uuid for r in rows])
        note = (
            f"power from hl-smi's CSV every {self._period_s} s (its fastest rate): sampled, no energy counter"
        )
        return [
            DeviceInfo(
                r.uuid,
                r.name,
                Kind.GPU,
                Source.SAMPLED,
                False,
                power_limit_w=r.power_max_w,
                index=r.index,
                note=note,
                vendor=Vendor.HABANA,
                profile=board_profile(Vendor.HABANA, r.name),
            )
            for r in rows
        ]

    def _start(self, uuids: list[str]) -> None:
        if self._process is not None and self._process.poll() is None:
            return  # devices() asked again (the sampler does): one loop, not a second left running
        try:
            self._process = self._popen(
                [*self._args, "-l", str(self._period_s)], stdout=subprocess.PIPE, text=True
            )
        except OSError as e:
            raise SensorUnavailable(f"hl-smi could not start its loop ({e}): not measuring Gaudi") from e
        wanted = set(uuids)
        self._thread = threading.Thread(target=self._follow, args=(self._process.stdout, wanted), daemon=True)
        self._thread.start()

    def _follow(self, stream: IO[str], wanted: set[str]) -> None:
        """Keep each device's latest line and its arrival time, until hl-smi exits."""
        for line in stream:
            row = parse_line(line)
            if row is not None and row.uuid in wanted:
                with self._lock:
                    self._latest[row.uuid] = (row, self._clock.monotonic())

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """The device's latest line: its power (timed by its arrival), utilisation, memory and limit.

        Raises:
            SensorError: No line has come yet, or hl-smi exited.
        """
        with self._lock:
            latest = self._latest.get(device.uuid)
        if self._process is not None and self._process.poll() is not None:
            raise SensorError(f"{device.uuid}: hl-smi exited ({self._process.returncode})")
        if latest is None:
            raise SensorError(f"{device.uuid}: no line from hl-smi yet")
        row, arrived_s = latest
        return Reading(
            device.uuid,
            t_s,
            power_w=row.power_w,
            utilisation_pct=row.utilisation_pct,
            memory_used_bytes=int(row.memory_used_bytes) if row.memory_used_bytes is not None else None,
            power_t_s=min(arrived_s, t_s),
            power_limit_w=row.power_max_w,
            next_read_s=arrived_s + self._period_s,
        )

    def close(self) -> None:
        """Stop hl-smi's loop and its reader (a verified stop: a stuck reader is logged)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)
            if self._thread.is_alive():
                log.warning("hl-smi reader thread did not stop within 5 s")
