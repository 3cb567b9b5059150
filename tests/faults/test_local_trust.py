"""Fault: another user's process planted figures in a run through the shared lock folder.

On the old code the device-lock folder was world-writable (1777): as
`nobody`, another user locked a device before root's run and named a metrics
server of its own in the lock file; root's `wattlog run -- sleep 6` recorded
its 12.2 MJ as the device's energy, labelled `counter`. Serving garbage
instead crashed the run at start, so its command never ran. Now the folder
is private (0700, fixed if ours, refused if not), a lock holder's file and
process must be this user's before its figures are read, and what another
process serves is validated: garbage is a note, and the run goes on.
"""

from __future__ import annotations

import http.server
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattlog.clock import FakeClock
from wattlog.errors import ConfigError, SensorError
from wattlog.telemetry.agent import Agent, AgentConfig
from wattlog.telemetry.devicelock import lock_name
from wattlog.telemetry.private import private_folder
from wattlog.telemetry.sensors.estimate import EstimateSensor
from wattlog.trainer.join import JoinedAgents, read_counters

NOBODY = 65534
PLANTER = """
import fcntl, json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.write(fd, json.dumps({"pid": os.getpid(), "metrics_url": sys.argv[2]}).encode())
print("holding", flush=True)
time.sleep(60)
"""


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder another user can reach (pytest's tmp_path is root's, 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="wattlog-trust-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.fixture
def garbage_server() -> Iterator[str]:
    class Garbage(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'wattlog_energy_joules_total{device="estimate:cpu"} \xff\xfe{{{ not metrics\n'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Garbage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()


def test_state_folders_are_created_private_and_fixed(tmp_path: Path) -> None:
    made = private_folder(tmp_path / "new" / "locks")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o1777)  # what the old code made of the lock folder
    assert stat.S_IMODE(private_folder(loose).stat().st_mode) == 0o700


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to make a folder of another user")
def test_a_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(ConfigError, match="belongs to uid 65534"):
        private_folder(theirs)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a process as nobody")
def test_a_lock_planted_by_another_user_is_not_trusted(shared_tmp: Path, garbage_server: str) -> None:
    locks = shared_tmp / "locks"
    locks.mkdir()
    locks.chmod(0o1777)  # the old lock folder, before the agent fixes it
    command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable]
    planter = subprocess.Popen(
        [*command, "-c", PLANTER, str(locks / lock_name("estimate:cpu")), garbage_server],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert planter.stdout is not None and planter.stdout.readline().startswith("holding")
        config = AgentConfig(port=None, lock_dir=locks, flush_s=0.1)
        with Agent(config, sensors=[EstimateSensor()], clock=FakeClock()) as agent:
            held = agent.held_elsewhere
            notes = " ".join(agent.notes)
    finally:
        planter.kill()
        planter.wait()
    assert held == {"estimate:cpu": None}  # old code: the planter's URL, whose figures were recorded
    assert "not trusted (the lock file belongs to uid 65534)" in notes
    assert stat.S_IMODE(locks.stat().st_mode) == 0o700


def test_garbage_served_by_another_agent_is_a_note_and_the_run_goes_on(garbage_server: str, caplog) -> None:
    with pytest.raises(SensorError, match="not Prometheus metrics|cannot read"):
        read_counters(garbage_server, ["estimate:cpu"])
    joined = JoinedAgents(FakeClock())
    joined.start({"estimate:cpu": garbage_server})  # old code: ValueError, the run's command never ran
    assert not joined and "devices are not in this run" in caplog.text


def test_a_lock_file_naming_no_http_server_is_not_read(tmp_path: Path) -> None:
    from wattlog.telemetry.devicelock import DeviceLocks

    first = DeviceLocks(tmp_path / "locks")
    assert first.acquire("gpu-x", "file:///etc/shadow") is None
    holder = DeviceLocks(tmp_path / "locks", pid=1).acquire("gpu-x")
    first.release_all()
    assert holder is not None and holder.metrics_url is None
    assert json.loads((tmp_path / "locks" / lock_name("gpu-x")).read_text() or "{}") == {}
