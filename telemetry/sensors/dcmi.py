"""Node input power from the BMC over IPMI DCMI, through `ipmitool dcmi power reading`.

DCMI's Get Power Reading gives the platform's instantaneous power and its average
over the BMC's sampling period (DCMI 1.5, section 6.6.1); the average is taken, so
every instant of the period counts, and the period the BMC states is the row's rate.
No energy counter exists in DCMI: the node's energy is its power integrated.

The password never appears in the command line: `ipmitool -E` reads IPMI_PASSWORD from
the environment (the in-band "local" BMC needs none).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence

from wattlog.errors import SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.sensors.bmc import BmcConfig, node_profile
from wattlog.telemetry.types import DeviceInfo, Reading

Runner = Callable[[Sequence[str], float], str]
"""Runs one command with a timeout (s) and returns its stdout; raises OSError or SensorError on failure."""

_AVERAGE = re.compile(r"Average power reading over sample period:\s*(\d+(?:\.\d+)?)\s*Watts", re.IGNORECASE)
_PERIOD = re.compile(r"Sampling period:\s*(\d+)\s*Seconds", re.IGNORECASE)
_STATE = re.compile(r"Power reading state is:\s*(\w+)", re.IGNORECASE)


def run_command(command: Sequence[str], timeout_s: float) -> str:
    """Run `command`; its stdout.

    Raises:
        SensorError: It failed, timed out or exited non-zero (its stderr's last line said).
    """
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout_s, check=False)  # noqa: S603 - ipmitool as the operator named it (WATTLOG_IPMITOOL), argv list, no shell
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SensorError(f"{command[0]}: {type(e).__name__}") from e
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SensorError(f"{command[0]} exited {done.returncode}: {last}")
    return done.stdout


class DcmiNodeSensor:
    """The node boundary read from the BMC's DCMI power reading: one `node` device.

    Args:
        config: Where the BMC is ("local" or a lanplus host; credentials from the environment).
        run: Runs a command (injected for tests; default a subprocess).
    """

    def __init__(self, config: BmcConfig, run: Runner = run_command) -> None:
        self._config = config
        self._run = run
        self._uuid = f"dcmi:{config.dcmi}"

    def _command(self) -> list[str]:
        target = [] if self._config.dcmi == "local" else ["-I", "lanplus", "-H", self._config.dcmi, "-E"]
        user = ["-U", self._config.ipmi_user] if self._config.ipmi_user and target else []
        return [self._config.ipmitool, *target, *user, "dcmi", "power", "reading"]

    def _reading(self) -> tuple[float, float | None]:
        """(average power W, sampling period s or None) from one DCMI power reading."""
        text = self._run(self._command(), self._config.timeout_s)
        state = _STATE.search(text)
        if state and state[1].lower() != "activated":
            raise SensorError(f"{self._uuid}: DCMI power reading is {state[1]} on this BMC")
        average = _AVERAGE.search(text)
        if average is None:
            raise SensorError(f"{self._uuid}: no average power in ipmitool's answer")
        period = _PERIOD.search(text)
        return float(average[1]), float(period[1]) if period else None

    def devices(self) -> list[DeviceInfo]:
        """The node, if its BMC answers a DCMI power reading.

        Raises:
            SensorUnavailable: ipmitool is missing or the BMC does not answer.
        """
        try:
            _, period_s = self._reading()
        except SensorError as e:
            raise SensorUnavailable(f"DCMI at {self._config.dcmi}: {e}") from e
        every = f"averaged over the BMC's {period_s:g} s sampling period" if period_s else "period not stated"
        note = f"node input power from the BMC over IPMI DCMI ({self._config.dcmi}), {every}"
        profile = node_profile("DCMI", period_s=period_s)
        node = DeviceInfo(
            self._uuid, "node (DCMI)", Kind.NODE, Source.SAMPLED, False, note=note, profile=profile
        )
        return [node]

    def read(self, device: DeviceInfo, t_s: float) -> Reading:
        """The node's average input power over the BMC's last sampling period.

        Raises:
            SensorError: The BMC did not answer or gave no number.
        """
        if device.uuid != self._uuid:
            raise SensorError(f"{device.uuid} is not this DCMI sensor's node")
        power_w, period_s = self._reading()
        next_s = t_s + period_s if period_s else None
        # each answer is the BMC's latest publication, stamped when read: the integrator then holds it
        # over the stretch before (an average of that period) and spaces gaps by the BMC's own period
        return Reading(device.uuid, t_s, power_w=power_w, power_t_s=t_s, next_read_s=next_s)

    def close(self) -> None:
        """Nothing to release (each reading is one ipmitool run)."""
