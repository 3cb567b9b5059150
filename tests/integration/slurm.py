"""A real single-node SLURM on loopback for the tests: munged, slurmctld and slurmd in a tmp folder.

Each cluster gets its own munge key and socket, config, state, spool, pid and log files,
and free ports, so it never meets the machine's own SLURM (if any) or another test's.
Debian's slurm-wlm 22.05 and munge (``scripts/setup.sh --servers``) run this as root;
``available()`` says whether the binaries are there and the user can run them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.integration.servers import free_port
from tests.waiting import wait_until

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "sinfo")


def missing() -> str | None:
    """Why no SLURM can start here (None: it can)."""
    absent = [name for name in BINARIES if shutil.which(name) is None]
    if absent:
        return f"{', '.join(absent)} not found: apt-get install -y --no-install-recommends slurm-wlm munge"
    if os.geteuid() != 0:
        return "slurmd must run as root to launch tasks (run the SLURM test as root, e.g. in CI's container)"
    return None


@dataclass(frozen=True, slots=True)
class Slurm:
    """A running test cluster: its config file, node name and folder."""

    conf: Path
    node: str
    root: Path

    @property
    def env(self) -> dict[str, str]:
        """The environment that points SLURM's commands at this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str, timeout_s: float = 30.0) -> str:
        """Run a SLURM command (sbatch, scontrol, ...) against this cluster; its stdout."""
        done = subprocess.run(
            args, env=self.env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
        assert done.returncode == 0, f"{' '.join(args)}: {done.stderr}\n{self.logs()}"
        return done.stdout

    def wait_job(self, job_id: str, timeout_s: float = 60.0) -> str:
        """Wait until the job leaves PENDING/RUNNING; its final state."""
        states: list[str] = []

        def ended() -> str | None:
            shown = self.run("scontrol", "show", "job", job_id)
            states[:] = [shown.split("JobState=", 1)[1].split()[0]]
            return None if states[0] in {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING"} else states[0]

        return wait_until(
            ended,
            timeout_s,
            lambda: f"job {job_id} still {states[0]} after {timeout_s} s\n{self.logs()}",
            poll_s=0.2,
        )

    def logs(self) -> str:
        """The daemons' logs (shown when something fails)."""
        return "\n".join(
            f"== {p.name}\n{p.read_text()[-3000:]}" for p in sorted((self.root / "log").glob("*"))
        )


def _config(root: Path, node: str, extra: Mapping[str, object]) -> str:
    settings: dict[str, object] = {
        "ClusterName": "wattlogtest",
        "SlurmctldHost": f"{node}(127.0.0.1)",
        "SlurmctldPort": free_port(),
        "SlurmdPort": free_port(),
        "AuthType": "auth/munge",
        "AuthInfo": f"socket={root / 'munge.sock'}",
        "CredType": "cred/munge",
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "StateSaveLocation": root / "state",
        "SlurmdSpoolDir": root / "spool",
        "SlurmctldPidFile": root / "slurmctld.pid",
        "SlurmdPidFile": root / "slurmd.pid",
        "SlurmctldLogFile": root / "log" / "slurmctld.log",
        "SlurmdLogFile": root / "log" / "slurmd.log",
        # No cgroups, accounting daemon or MPI in a test sandbox: the plainest plugins.
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "AccountingStorageType": "accounting_storage/none",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU",
        "MpiDefault": "none",
        "ReturnToService": 2,
        **extra,
    }
    lines = [f"{key}={value}" for key, value in settings.items()]
    # Two CPUs whatever the machine has: a two-task job fits, and oversubscription is allowed.
    lines.append(f"NodeName={node} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN")
    lines.append(f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE OverSubscribe=YES State=UP")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def running_slurm(
    root: Path, timeout_s: float = 20.0, extra: Mapping[str, object] | None = None
) -> Iterator[Slurm]:
    """Start munged, slurmctld and slurmd under `root`; stop them (by their own pids) after.

    `extra` adds or overrides slurm.conf settings (e.g. ``Prolog``/``Epilog`` scripts). Under a long
    `root` (a CI's TMPDIR of 120 characters) the cluster runs in a short private folder instead:
    munge's and slurmd's sockets live there, and a socket's path is capped at 108 bytes.
    """
    if len(str(root)) <= 40:
        with _running_slurm(root, timeout_s, extra) as slurm:
            yield slurm
        return
    short = Path(tempfile.mkdtemp(prefix="wl-slurm-", dir="/tmp"))
    short.chmod(0o755)  # munged wants every folder above its socket searchable
    try:
        with _running_slurm(short, timeout_s, extra) as slurm:
            yield slurm
    finally:
        shutil.rmtree(short, ignore_errors=True)


@contextlib.contextmanager
def _running_slurm(root: Path, timeout_s: float, extra: Mapping[str, object] | None) -> Iterator[Slurm]:
    for folder in ("state", "spool", "log"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    node = socket.gethostname().split(".", 1)[0]
    conf = root / "slurm.conf"
    conf.write_text(_config(root, node, extra or {}))
    munge = ["munged", "-F", "-f", f"--key-file={key}", f"--socket={root / 'munge.sock'}"]
    munge += [f"--pid-file={root / 'munged.pid'}", f"--log-file={root / 'log' / 'munged.log'}"]
    munge += [f"--seed-file={root / 'munged.seed'}"]
    commands = [munge, ["slurmctld", "-D", "-f", str(conf)], ["slurmd", "-D", "-f", str(conf)]]
    processes: list[subprocess.Popen[bytes]] = []
    slurm = Slurm(conf, node, root)
    try:
        for command in commands:
            out = (root / "log" / f"{command[0]}.out").open("wb")
            processes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT))
            if command[0] == "munged":
                _wait(lambda: (root / "munge.sock").exists(), timeout_s, slurm)
        _wait(lambda: "idle" in slurm.run("sinfo", "-h", "-o", "%t"), timeout_s, slurm)
        yield slurm
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait(ready: Callable[[], bool], timeout_s: float, slurm: Slurm) -> None:
    wait_until(ready, timeout_s, lambda: f"SLURM not ready after {timeout_s} s\n{slurm.logs()}", poll_s=0.2)
