"""How long the SLURM prolog's agent lives: until its job ends, its controller is gone, or SIGTERM.

On 38e5f82 the real SLURM test passed and left its job's agent (`wattlog slurm ... agent`)
running, orphaned, 48 minutes later, calling ``scontrol update ... AdminComment`` every
0.5 s with its slurmctld long gone; SIGTERM took about 60 s to end it (it waited inside
``scontrol``). Now the agent asks ``scontrol show job`` at each round (:class:`JobWatch`) and
ends when the job is unknown or ended, or when the controller has not answered past a
deadline (no epilog will come); and every SLURM command it runs is killed at once when
SIGTERM arrives (:func:`stoppable_runner`), so it ends within a second of the epilog's signal.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]

ENDED_STATES = frozenset(
    {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}
    | {"TIMEOUT", "REVOKED", "SPECIAL_EXIT"}
)
"""JobState values of a job that has ended (`scontrol show job`)."""
ORPHAN_AFTER_S = 600.0
"""How long the controller may stay unreachable before the agent takes it as gone (no epilog)."""


def stoppable_runner(stop: threading.Event, timeout_s: float = 30.0, poll_s: float = 0.05) -> Runner:
    """A Runner whose command is killed when `stop` is set (exit 143) or after `timeout_s` (exit 124)."""

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        try:
            process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # noqa: S603 - argv of SLURM's own tools (scontrol), no shell
        except FileNotFoundError:
            return subprocess.CompletedProcess(args, 127, "", f"{args[0]}: not found")
        deadline_s = time.monotonic() + timeout_s
        while process.poll() is None:
            if stop.wait(poll_s) or time.monotonic() > deadline_s:
                process.kill()
                process.communicate()
                code = 143 if stop.is_set() else 124
                return subprocess.CompletedProcess(args, code, "", f"{args[0]}: stopped (exit {code})")
        out, err = process.communicate()
        return subprocess.CompletedProcess(args, process.returncode, out, err)

    return run


@dataclass
class JobWatch:
    """Whether the agent's job still runs, by `scontrol show job` (one call per :meth:`ended`).

    Args:
        job_id: The job.
        runner: Runs the SLURM command.
        orphan_after_s: The controller unreachable this long: it is gone, the agent ends.
        clock: Monotonic seconds.
    """

    job_id: str
    runner: Runner
    orphan_after_s: float = ORPHAN_AFTER_S
    clock: Callable[[], float] = time.monotonic
    _silent_since_s: float | None = field(default=None, init=False)

    def ended(self) -> str | None:
        """Why the agent should end now (the job ended or unknown, the controller gone), or None."""
        done = self.runner(["scontrol", "show", "job", self.job_id])
        said = f"{done.stdout} {done.stderr}"
        if "Invalid job id" in said:
            return f"job {self.job_id} is unknown to scontrol (it ended and was purged)"
        if done.returncode == 0:
            self._silent_since_s = None
            state = _job_state(done.stdout)
            return f"job {self.job_id} is {state}" if state in ENDED_STATES else None
        if done.returncode == 143:  # killed by our own stop: not the controller's answer
            return None
        now_s = self.clock()
        if self._silent_since_s is None:
            self._silent_since_s = now_s
        silent_s = now_s - self._silent_since_s
        if silent_s >= self.orphan_after_s:
            return (
                f"the SLURM controller has not answered for {silent_s:.0f} s: no epilog will stop this agent"
            )
        return None


def _job_state(shown: str) -> str:
    """The JobState of `scontrol show job` output ("" if none)."""
    for token in shown.split():
        key, _, value = token.partition("=")
        if key == "JobState":
            return value
    return ""
