"""Device locks: one agent per device, across descriptors and processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from wattlog.telemetry.devicelock import DeviceLocks, Holder


def test_second_locker_sees_the_holder(tmp_path: Path) -> None:
    # the holder's pid must be a live process of this user (a lock naming another is not trusted)
    pid = os.getpid()
    first, second = DeviceLocks(tmp_path, pid=pid), DeviceLocks(tmp_path, pid=222)
    assert first.acquire("GPU-1", "http://127.0.0.1:9464/metrics") is None
    holder = second.acquire("GPU-1")
    assert holder == Holder(pid=pid, metrics_url="http://127.0.0.1:9464/metrics")
    assert holder.describe("GPU-1") == f"GPU-1 is measured by agent pid {pid} (http://127.0.0.1:9464/metrics)"
    assert second.acquire("GPU-2") is None  # other devices are independent
    assert first.acquire("GPU-1") is None  # re-acquiring what one holds is fine
    first.release_all()
    assert second.acquire("GPU-1") is None
    assert second.held == ["GPU-2", "GPU-1"]
    second.release_all()


def test_uuids_with_slashes_get_distinct_files(tmp_path: Path) -> None:
    locks = DeviceLocks(tmp_path / "deep" / "dir")
    assert locks.acquire("intel-rapl:0/intel-rapl:0:0") is None
    assert locks.acquire("intel-rapl:0_intel-rapl:0:0") is None  # same sanitised name, other device
    assert len(list((tmp_path / "deep" / "dir").iterdir())) == 2
    locks.release_all()


def test_lock_held_by_another_process_until_it_dies(tmp_path: Path) -> None:
    script = (
        "import sys; from pathlib import Path; from wattlog.telemetry.devicelock import DeviceLocks\n"
        f"l = DeviceLocks(Path({str(tmp_path)!r})); assert l.acquire('GPU-x', 'http://h:1/metrics') is None\n"
        "print('locked', flush=True); sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        locks = DeviceLocks(tmp_path)
        assert locks.acquire("GPU-x") == Holder(pid=child.pid, metrics_url="http://h:1/metrics")
    finally:
        child.kill()
        child.wait(timeout=10)
    assert locks.acquire("GPU-x") is None  # the kernel dropped the dead process's lock
    locks.release_all()
