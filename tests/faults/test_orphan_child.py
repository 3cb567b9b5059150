"""Fault: `wattlog run -- CMD` killed with -9 left its command running, unmeasured, for good.

On the old code the child (the training) outlived its parent's kill -9: nothing measured it
and nothing would stop it. Now the child is started with the kernel's parent-death signal
(prctl PR_SET_PDEATHSIG): it gets SIGTERM when `wattlog run` dies, as after any preemption,
and can checkpoint and exit.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from tests.faults.test_preemption import children, wait_for_line, wattlog
from tests.waiting import wait_until


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_command_of_a_wattlog_run_killed_with_9_gets_sigterm(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    with wattlog(["run", "--run", "job", "--db", db, "--", "sleep", "60"], tmp_path) as process:
        wait_for_line(process, r"metrics on http://")
        [child] = [
            p for p in children(process.pid, "sleep 60") if "sleep" in " ".join(psutil.Process(p).cmdline())
        ]
        os.kill(process.pid, signal.SIGKILL)  # wattlog only, not its process group
        process.wait(timeout=10)

        def gone() -> bool:
            return not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE

        wait_until(gone, 10, "the command outlived wattlog's kill -9", 0.05)  # old code
