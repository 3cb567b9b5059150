"""What a command under `wattlog run` did: its CPU time, how often it was runnable, the GPUs' use.

CPU time alone misreads a CPU-bound command on a loaded machine: at load 8 on 2 cores one
that spun for 1.0 s of CPU took 6.1 s and read "idle 81 %", though it waited for a CPU all
along. So :class:`RunnableSampler` also samples, a few times a second, whether any process of
the command's tree is runnable (state R: on a CPU or waiting for one); a command is busy for
the higher of the two fractions, or of the GPUs' utilisation (:class:`~wattlog.events.Activity`).
"""

from __future__ import annotations

import logging
import subprocess
import threading
from typing import Any

import psutil

from wattlog.errors import WattlogError
from wattlog.events import Activity, EventKind
from wattlog.trainer.session import RunSession, cause_of

log = logging.getLogger(__name__)

__all__ = ["RunnableSampler", "children_cpu_s", "record_activity"]


def children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's ended children and the descendants they waited for."""
    times = psutil.Process().cpu_times()
    return float(times.children_user + times.children_system)


class RunnableSampler:
    """Start the command (as the Supervisor's ``popen``) and sample whether its process tree is runnable.

    Args:
        period_s: Seconds between samples (a sample reads /proc for each process of the tree).
    """

    def __init__(self, period_s: float = 0.1) -> None:
        self._period_s = period_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples = 0
        self.runnable = 0

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start the child like subprocess.Popen, then sample it until it ends or :meth:`stop`."""
        child: subprocess.Popen[bytes] = subprocess.Popen(*args, **kwargs)  # noqa: S603 - the command the user asked `wattlog run` to measure, as given
        self._thread = threading.Thread(
            target=self._loop, args=(child.pid,), name="wattlog-runnable", daemon=True
        )
        self._thread.start()
        return child

    def stop(self) -> float | None:
        """Stop sampling; the fraction of samples with a runnable process, 0..1 (None: no sample)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        return self.runnable / self.samples if self.samples else None

    def _loop(self, pid: int) -> None:
        try:
            root = psutil.Process(pid)
            while not self._stop.wait(self._period_s):
                tree = [root, *root.children(recursive=True)]
                states = [_state(p) for p in tree]
                if root.status() == psutil.STATUS_ZOMBIE:  # ended: the samples stop with it
                    return
                self.samples += 1
                self.runnable += psutil.STATUS_RUNNING in states
        except psutil.Error:  # the command ended between two reads
            return


def _state(process: psutil.Process) -> str:
    try:
        return str(process.status())
    except psutil.Error:
        return ""


def record_activity(session: RunSession, activity: Activity) -> None:
    """Store what the command did, so its energy is split into busy and idle (a failure is a warning)."""
    if session.recorder is None:
        return
    try:
        session.recorder.event(EventKind.ACTIVITY, payload=activity.to_json(), time_s=activity.end_s)
    except WattlogError as error:
        why = "the command's activity is not recorded (its energy is not split by it): %s"
        log.warning(why, error, extra=cause_of(error))
