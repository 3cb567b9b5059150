"""Real `python -m wattlog` processes for the fault tests, in sessions of their own."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path


@contextlib.contextmanager
def wattlog_session(
    args: Sequence[str], cwd: Path, env: Mapping[str, str]
) -> Iterator[subprocess.Popen[str]]:
    """`python -m wattlog ARGS` in a session of its own; whatever is left of its group is killed after.

    Its own session, so a test can signal the wattlog process alone (as Kubernetes does to PID 1)
    and still leave no child behind. Run from `cwd` (a test folder): the installed package, not
    the repository's folders. stdout and stderr together, as text.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "wattlog", *args],
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
