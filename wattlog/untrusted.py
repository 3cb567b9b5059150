"""Opening files that come from elsewhere (a bundle, a spool file) without trusting what they are.

A FIFO given as a file blocks a plain ``open()`` forever, and /dev/zero never
ends; so a file from elsewhere is opened without blocking and used only if it
is a regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

from wattlog.errors import UntrustedInput

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISSOCK, "a socket"),
)


def open_regular(path: Path, what: str = "file") -> IO[bytes]:
    """`path` opened for reading if it is a regular file (a FIFO is opened without blocking, then refused).

    Args:
        path: The file.
        what: What it should be, for the message ("bundle", "spool file").

    Raises:
        UntrustedInput: It is a FIFO, a device, a folder or cannot be opened.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        raise UntrustedInput(path, f"cannot open the {what}: {error.strerror or error}") from error
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
        raise UntrustedInput(path, f"not a regular file ({kind}); give the {what} itself")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
