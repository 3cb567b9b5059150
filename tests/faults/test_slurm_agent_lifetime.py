"""Fault: the SLURM prolog's agent outliving its job and its controller, and slow to SIGTERM.

On 38e5f82 the real SLURM test passed and left its job's agent running, orphaned, 48 minutes
later, calling ``scontrol update`` every 0.5 s with its slurmctld long gone; SIGTERM took about
60 s to end it (it waited inside ``scontrol``). Now the agent ends when its job is unknown or
ended, or its controller silent past a deadline, and within a second of SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.waiting import wait_until
from wattlog.accounting.fleet.slurm_hooks import SlurmHooks, serve_agent
from wattlog.accounting.fleet.slurm_lifetime import JobWatch

ENV = {"SLURM_JOB_ID": "91", "SLURM_NNODES": "1", "SLURM_NODEID": "0", "SLURMD_NODENAME": "n1"}


def _purged(args: list[str]) -> subprocess.CompletedProcess[str]:
    """slurmctld after the job was purged: `show job` says so; an update fails the same way."""
    return subprocess.CompletedProcess(args, 1, "", "slurm_load_jobs error: Invalid job id specified")


def test_an_agent_whose_job_is_unknown_to_scontrol_ends_by_itself(tmp_path: Path) -> None:
    hooks = SlurmHooks(db=f"sqlite:///{tmp_path / 'l.db'}", state_dir=tmp_path / "state", flush_s=0.1)
    hooks.port, hooks.simulate, hooks.comment_every_s = -1, 1, 0.1
    environ = {**ENV, "WATTLOG_SPOOL_DIR": str(tmp_path / "spool")}
    stop = threading.Event()
    codes: list[int] = []
    agent = threading.Thread(target=lambda: codes.append(serve_agent(hooks, environ, stop, _purged)))
    agent.start()
    try:
        wait_until(lambda: not agent.is_alive(), 30.0, "the agent outlived its job")  # 38e5f82: forever
    finally:
        stop.set()
        agent.join()
    assert codes == [0]


def test_a_controller_silent_past_the_deadline_ends_the_agent() -> None:
    now_s = [0.0]

    def unreachable(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(
            args, 1, "", "Unable to contact slurm controller (connect failure)"
        )

    watch = JobWatch("91", unreachable, orphan_after_s=600.0, clock=lambda: now_s[0])
    assert watch.ended() is None
    now_s[0] = 599.0
    assert watch.ended() is None  # a controller restarting is waited for
    now_s[0] = 601.0
    assert "has not answered for 601 s" in (watch.ended() or "")


def test_an_agent_stuck_in_scontrol_ends_within_a_second_of_sigterm(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    called = tmp_path / "called"
    scontrol = bin_dir / "scontrol"  # a controller that never answers
    scontrol.write_text(f"#!/bin/sh\ntouch {called}\nexec sleep 60\n")
    scontrol.chmod(0o755)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, **ENV, "PYTHONPATH": str(root), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env["WATTLOG_SPOOL_DIR"] = str(tmp_path / "spool")
    args = ["slurm", "--db", f"sqlite:///{tmp_path / 'l.db'}", "--state-dir", str(tmp_path / "state")]
    args += ["--comment-every-s", "0.2", "--flush-s", "0.2", "--port", "-1", "--simulate", "1", "agent"]
    agent = subprocess.Popen([sys.executable, "-m", "wattlog", *args], env=env, start_new_session=True)
    try:
        wait_until(called.exists, 60.0, "the agent never asked scontrol")
        time.sleep(0.3)  # well inside scontrol's wait now
        sent_s = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=30)
        took_s = time.monotonic() - sent_s
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        if _group_alive(agent.pid):  # nothing of the test's own may outlive it (a stray scontrol)
            os.killpg(agent.pid, signal.SIGKILL)
    print(f"ended {took_s:.2f} s after SIGTERM")
    assert took_s <= 1.5, f"{took_s:.1f} s"  # 38e5f82: until scontrol's 30 s timeout, or longer


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
