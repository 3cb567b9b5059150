"""SIGTERM, as SLURM and Kubernetes send it on preemption, to the real CLI in its own process group.

Each test starts `python -m wattlog ...` in a session of its own, waits until
it works (a command running, training under way, the report served), sends
SIGTERM to the wattlog process alone (as Kubernetes does to PID 1), and checks
the exit code (143 = 128 + SIGTERM), the run's status and energy in the
ledger, and that no child it started survives (by pid).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.servers import free_port, http_get
from tests.processes import wattlog_session
from tests.waiting import wait_until
from wattlog.accounting.ledger import Ledger, make_engine

SUMMARY = re.compile(r"measured ([\d.,]+) (J|Wh|kWh), ([\d.,]+) \2 recorded in the ledger")
JOULES = {"J": 1.0, "Wh": 3600.0, "kWh": 3.6e6}


def summary_j(out: str) -> tuple[float, float]:
    """The measured and recorded energy of a run's ending line, joules (printed to 3 figures)."""
    measured, unit, recorded = SUMMARY.search(out).groups()  # type: ignore[union-attr]
    return float(measured.replace(",", "")) * JOULES[unit], float(recorded.replace(",", "")) * JOULES[unit]


@contextlib.contextmanager
def wattlog(args: list[str], tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """`python -m wattlog ARGS` in its own session; whatever is left of its group is killed after."""
    env = {
        **os.environ,
        "TMPDIR": str(tmp_path),  # the agent's device locks: private to this test
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "160",
    }
    with wattlog_session(args, tmp_path, env) as process:
        yield process


def wait_for_line(process: subprocess.Popen[str], pattern: str, timeout_s: float = 60.0) -> str:
    """Read the process's output until a line matches `pattern`; returns that line."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    seen = []
    for line in process.stdout:
        seen.append(line)
        if re.search(pattern, line):
            return line
        assert time.monotonic() < deadline, "".join(seen)
    raise AssertionError(f"no line matching {pattern!r}:\n{''.join(seen)}")


def children(pid: int, wanted: str, timeout_s: float = 30.0) -> list[int]:
    """Pids of `pid`'s descendants once one whose command line contains `wanted` runs."""

    def running() -> list[int]:
        found = psutil.Process(pid).children(recursive=True)
        return [p.pid for p in found] if any(wanted in " ".join(p.cmdline()) for p in found) else []

    return wait_until(running, timeout_s, f"no child running {wanted!r}", poll_s=0.05)


def assert_gone(pids: list[int], group: int) -> None:
    """Every pid has exited (a zombie counts as gone once reaped) and the process group is empty."""

    def alive() -> list[int]:
        return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]

    wait_until(lambda: not alive(), 10.0, lambda: f"children left running: {alive()}", poll_s=0.05)
    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)


def scraped_energy_j(url: str) -> float:
    """Sum of wattlog_energy_joules_total the agent serves now."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "wattlog_energy_joules_total"
    )


@pytest.mark.parametrize("whole_group", [False, True], ids=["to-wattlog", "to-the-group"])
def test_sigterm_of_wattlog_run_flushes_closes_as_preempted_and_exits_143(
    tmp_path: Path, whole_group: bool
) -> None:
    """Kubernetes signals the container's first process; SLURM's scancel signals every process of the step."""
    db = f"sqlite:///{tmp_path / 'l.db'}"
    with wattlog(["run", "--run", "job", "--db", db, "--", "sleep", "60"], tmp_path) as process:
        url = wait_for_line(process, r"metrics on http://").split("metrics on ")[1].strip()
        pids = children(process.pid, "sleep 60")
        time.sleep(1.5)  # well inside the first 10 s flush interval: all of it is the "last interval"
        before_j = scraped_energy_j(url)
        if whole_group:
            os.killpg(process.pid, signal.SIGTERM)
        else:
            process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 143, out
        assert_gone(pids, process.pid)
    assert "Traceback" not in out
    run = Ledger(make_engine(db)).get_run("job")
    stored_j = sum(t.energy_j for t in Ledger(make_engine(db)).energy_totals("job"))
    measured_j, recorded_j = summary_j(out)
    to = "group" if whole_group else "pid"
    print(
        f"SIGTERM of wattlog run (to the {to}): scraped {before_j:.3f} J before, agent integrated "
        f"{measured_j:.3f} J, ledger holds {stored_j:.3f} J, exit {process.returncode}"
    )
    assert run.status == "preempted" and run.end_s is not None
    assert before_j > 0 and stored_j >= before_j  # nothing integrated before the signal was lost
    assert stored_j == pytest.approx(measured_j, rel=5e-3)  # printed to 3 significant figures
    assert recorded_j == pytest.approx(measured_j, rel=1e-9)
    assert "all recorded" in out and "preempted (exit code 143)" in out
    kinds = [(e.kind, dict(e.payload)) for e in Ledger(make_engine(db)).events("job")]
    assert ("stopped", {"signal": "SIGTERM", "exit_code": 143}) in kinds


def test_sigterm_of_wattlog_agent_around_a_command_stops_the_command_and_exits_143(tmp_path: Path) -> None:
    with wattlog(["agent", "--port", "0", "--simulate", "1", "--", "sleep", "60"], tmp_path) as process:
        wait_for_line(process, r"metrics at http://")
        pids = children(process.pid, "sleep 60")
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 143, out
        assert_gone(pids, process.pid)
    assert "GPU-sim-0000" in out and "sampler:" in out  # still reports what it measured


def test_sigterm_of_wattlog_demo_stops_training_and_closes_the_run_as_preempted(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    args = ["demo", "--seconds", "300", "--model", "gpt-tiny", "--db", db, "--run", "d"]
    args += ["--simulate-gpus", "1"]
    with wattlog(args, tmp_path) as process:
        wait_for_line(process, r"Metrics on")
        time.sleep(2.0)
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=120)
        assert process.returncode == 143, out
        assert_gone([], process.pid)
    ledger = Ledger(make_engine(db))
    run = ledger.get_run("d")
    stored_j = sum(t.energy_j for t in ledger.energy_totals("d"))
    measured_j, recorded_j = summary_j(out)
    print(f"SIGTERM of wattlog demo: agent integrated {measured_j:.3f} J, ledger holds {stored_j:.3f} J")
    assert run.status == "preempted" and "Stopped by SIGTERM" in out and "Traceback" not in out
    assert stored_j > 0 and stored_j == pytest.approx(measured_j, rel=5e-3)
    assert any(e.kind == "progress" for e in ledger.events("d"))  # the last steps were recorded too


def test_sigterm_of_wattlog_report_stops_the_streamlit_server(tmp_path: Path) -> None:
    port = free_port()
    db = f"sqlite:///{tmp_path / 'l.db'}"
    Ledger(make_engine(db)).start_run("r")
    with wattlog(["report", "--db", db, "--port", str(port)], tmp_path) as process:
        pids = children(process.pid, "streamlit")

        def served() -> bool:
            assert process.poll() is None, "the report exited before it served"
            try:
                return http_get(f"http://127.0.0.1:{port}/_stcore/health", timeout_s=1) == b"ok"
            except OSError:
                return False

        wait_until(served, 60.0, "the report never served", poll_s=0.2)
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 143, out
        assert_gone(pids, process.pid)
    with pytest.raises(OSError):
        http_get(f"http://127.0.0.1:{port}/_stcore/health", timeout_s=1)
