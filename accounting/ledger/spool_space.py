"""Room for the spool on a full disk: blocks allocated past the file's end, and the durable write.

The spool is written when the ledger is down, and a ledger down for want of space often
shares its disk with the spool. So when measuring starts the spool file gets a segment
allocated past its end (Linux ``fallocate`` with ``FALLOC_FL_KEEP_SIZE``: the blocks are the
file's, its size and content unchanged, so readers see nothing of it), and each append
tops it up again. Appends into those blocks need no new ones: a disk that fills after the
start still takes the next ``reserve_bytes`` of spool (about 4,000 rows for 1 MiB).

Both functions are the spool's seams (``Spool(reserve=..., write=...)``): tests and the
soak pass ones that raise ``OSError(errno.ENOSPC)`` to play a full disk.
"""

from __future__ import annotations

import ctypes
import errno
import os
from typing import IO

DEFAULT_RESERVE_BYTES = 1 << 20
"""Room kept allocated past the spool's end: about 4,000 rows (a row is ~250 bytes)."""
_FALLOC_FL_KEEP_SIZE = 1


def reserve_keep_size(fd: int, nbytes: int) -> None:
    """Allocate `nbytes` past the end of `fd`'s file without changing its size.

    Raises:
        OSError: No room (ENOSPC), or the system or filesystem cannot (ENOSYS, EOPNOTSUPP).
    """
    fallocate = getattr(ctypes.CDLL(None, use_errno=True), "fallocate", None)
    if fallocate is None:  # not Linux
        raise OSError(errno.ENOSYS, "fallocate is not available on this system")
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fallocate.restype = ctypes.c_int
    if fallocate(fd, _FALLOC_FL_KEEP_SIZE, os.fstat(fd).st_size, nbytes) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def write_durably(handle: IO[str], data: str) -> None:
    """Write `data` to `handle`, flush it and fsync it (the spool's one write per flush).

    Raises:
        OSError: The disk is full or failing; part of `data` may be in the file (the caller cuts it).
    """
    handle.write(data)
    handle.flush()
    os.fsync(handle.fileno())
