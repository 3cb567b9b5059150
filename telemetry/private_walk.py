"""Create or verify a private folder without following anyone else's links.

The path is walked from ``/`` one component at a time, each opened relative to
the folder before it (``openat``), so nothing can be swapped in between the
check and the use. A component that exists must belong to root or to us, and
one that others can write must be sticky (``/tmp``): another user's folder or
link anywhere on the way means the path is planted, and nothing is created or
chmodded under it. Missing components are created 0700; the last folder must
be ours and is made 0700 through its descriptor, never by path.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from wattlog.errors import ConfigError, PlantedFolder

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


def open_private_folder(path: Path, uid: int | None = None) -> Path:
    """Create `path` 0700 (parents too) or check it is ours and private, refusing planted ones.

    Args:
        path: The folder (relative paths are taken from the current directory).
        uid: Whose it must be (default: this process's effective uid).

    Returns:
        The folder, as an absolute path.

    Raises:
        PlantedFolder: A component is a folder or link another user controls, or is not a folder.
        ConfigError: The folder cannot be created (PlantedFolder is one).
    """
    me = os.geteuid() if uid is None else uid
    full = Path(os.path.abspath(path))
    parts = full.parts[1:]
    fd = os.open("/", _DIR_FLAGS)
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            child = _step(fd, part, full, me, last=last)
            os.close(fd)
            fd = child
        return full
    finally:
        os.close(fd)


def _step(parent: int, name: str, full: Path, me: int, *, last: bool) -> int:
    """Open `name` under `parent` (creating it if missing), checked."""
    try:
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):  # another of our agents made it meanwhile
                os.mkdir(name, 0o700, dir_fd=parent)
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            if last or info.st_uid not in (0, me):
                raise PlantedFolder(full, f"{name} is a link owned by uid {info.st_uid}")
            child = os.open(name, _DIR_FLAGS, dir_fd=parent)  # a link root or we made: follow it
        else:
            child = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except NotADirectoryError as error:
        raise PlantedFolder(full, f"{name} is not a folder") from error
    except PlantedFolder:
        raise
    except OSError as error:
        raise ConfigError(f"cannot open or create the folder {full}: {error.strerror or error}") from error
    try:
        _check(child, name, full, me, last=last)
    except BaseException:
        os.close(child)
        raise
    return child


def _check(fd: int, name: str, full: Path, me: int, *, last: bool) -> None:
    info = os.fstat(fd)
    loose = stat.S_IMODE(info.st_mode) & 0o022
    if last:
        if info.st_uid != me:
            raise PlantedFolder(full, f"it belongs to uid {info.st_uid}, not to you (uid {me})")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o700)  # ours, opened without following links: safe to tighten
        return
    if info.st_uid not in (0, me):
        raise PlantedFolder(full, f"{name} on its way belongs to uid {info.st_uid}")
    if loose and not info.st_mode & stat.S_ISVTX:
        raise PlantedFolder(full, f"{name} on its way is writable by others and not sticky")
