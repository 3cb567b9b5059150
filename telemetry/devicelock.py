"""One measuring agent per device: an flock on a file per device UUID.

Two processes that see the same GPU (two ranks, a tracker beside a sidecar)
must never both count it, or the job's total comes out N times too big
(CodeCarbon issues 544, 936). Each agent takes an exclusive, non-blocking
``fcntl.flock`` on ``<lock_dir>/<uuid>.lock`` and writes its pid and metrics
URL into it; a device whose lock is held by another agent is skipped, and
the holder is named so the user knows where that device's energy is.

The kernel drops an flock when its process dies, so a crashed agent never
leaves a stale lock. Lock files are left in place on release: deleting a
file another process has open would let two agents lock two different inodes
of the same name.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from wattlog.errors import ConfigError, PlantedFolder
from wattlog.telemetry.private import private_folder

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Holder:
    """The agent that holds a device's lock.

    Attributes:
        pid: Its process id (None if it had not written it yet or cannot be read).
        metrics_url: Where it serves that device's metrics, if it serves them.
    """

    pid: int | None
    metrics_url: str | None
    distrust: str = ""
    """Why its figures must not be used ("" = a live process of this user holds it)."""

    @property
    def trusted(self) -> bool:
        """Whether a run may read this holder's metrics as the device's energy."""
        return not self.distrust

    def describe(self, uuid: str) -> str:
        """One line naming who measures `uuid`, e.g. for the agent's notes."""
        who = f"agent pid {self.pid}" if self.pid is not None else "another agent"
        if self.distrust:
            return f"{uuid} is locked by {who}, whose figures are not trusted ({self.distrust}): not measured"
        where = f" ({self.metrics_url})" if self.metrics_url else ""
        return f"{uuid} is measured by {who}{where}"


class DeviceLocks:
    """The device locks one agent holds.

    Args:
        lock_dir: Folder of the lock files; every agent of the node must use the same one.
        pid: Written into each lock file (default: this process).
    """

    def __init__(self, lock_dir: Path, pid: int | None = None) -> None:
        self._dir = lock_dir
        self._in = lock_dir  # where the locks are: lock_dir, or a fresh folder when it was planted
        self._pid = os.getpid() if pid is None else pid
        self._held: dict[str, int] = {}
        self._checked = False
        self._fresh: Path | None = None  # a private folder made because the given one was planted
        self.notes: list[str] = []
        """What went wrong with the lock folder (a planted one, replaced by a fresh private one)."""

    @property
    def held(self) -> list[str]:
        """UUIDs locked by this instance."""
        return list(self._held)

    def acquire(self, uuid: str, metrics_url: str | None = None) -> Holder | None:
        """Try to lock `uuid` without waiting.

        Args:
            uuid: The device's UUID.
            metrics_url: This agent's metrics URL, written into the lock file.

        Returns:
            None if this instance now holds the lock (or already did), else the holder.

        Raises:
            ConfigError: The lock folder cannot be created or written.
        """
        if uuid in self._held:
            return None
        path = self._path(uuid)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            writable = True
        except PermissionError:  # another user's lock file: flock works on a read-only descriptor too
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            writable = False
        except OSError as error:
            raise ConfigError(
                f"cannot create device lock {path}: {error}; set a writable lock_dir"
            ) from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            return holder
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"pid": self._pid, "metrics_url": metrics_url}).encode(), 0)
        self._held[uuid] = fd
        return None

    def release_all(self) -> None:
        """Unlock every held device (idempotent)."""
        for fd in self._held.values():
            # Erase before unlocking, so a new holder's content is never erased; a read-only
            # descriptor cannot, and the next holder overwrites it.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        self._held.clear()
        if self._fresh is not None:  # the fallback folder only this agent knew: nothing left in <tmp>
            shutil.rmtree(self._fresh, ignore_errors=True)
            self._fresh, self._checked = None, False

    def _path(self, uuid: str) -> Path:
        # Private to this user: a folder others can write lets them plant a lock that names
        # their own metrics server, whose figures a run would then record as its energy.
        if not self._checked:
            self._in = self._private_dir()
            self._checked = True
        return self._in / lock_name(uuid)

    def _private_dir(self) -> Path:
        """The lock folder, or a fresh private one (named in a note) when it was planted."""
        try:
            return private_folder(self._dir)
        except PlantedFolder as planted:
            # 0700 and a new name: nothing to redirect
            fresh = self._fresh = Path(tempfile.mkdtemp(prefix="wattlog-locks-"))
            note = (
                f"{planted}; measuring with device locks in {fresh}, so other agents of this node cannot "
                "see this run's devices"
            )
            logger.warning("%s", note)  # said where the user looks, not only in the agent's notes
            self.notes.append(note)
            return fresh


def lock_name(uuid: str) -> str:
    """The lock file's name of a device (UUIDs may hold "/" or ":"; a digest keeps sanitised names apart)."""
    digest = hashlib.sha1(uuid.encode(), usedforsecurity=False).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', uuid)}-{digest}.lock"


def _read_holder(fd: int) -> Holder:
    """Who holds the lock, from what it wrote, checked: the file and the process must be this user's."""
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    pid = data.get("pid")
    pid = pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None
    url = data.get("metrics_url")
    url = url if isinstance(url, str) and _AGENT_URL.match(url) else None
    return Holder(pid=pid, metrics_url=url, distrust=_distrust(fd, pid))


_AGENT_URL = re.compile(r"^http://[^\s/@]{1,255}/[\x21-\x7e]{0,200}$")
"""An agent's metrics URL: plain http to a host, no credentials (never file:, never a redirect target)."""


def _distrust(fd: int, pid: int | None) -> str:
    """Why a lock holder's figures must not be used; "" when this user's live process holds it."""
    me = os.getuid()
    owner = os.fstat(fd).st_uid
    if owner != me:
        return f"the lock file belongs to uid {owner}"
    if pid is None:
        return "no process id in the lock file"
    try:
        process_uid = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return f"process {pid} does not exist"
    if process_uid != me:
        return f"process {pid} belongs to uid {process_uid}"
    return ""
