"""Reading what comes from elsewhere (a bundle, a spool file, a request's JSON) without trusting it.

A FIFO given as a file blocks a plain ``open()`` forever, and /dev/zero never
ends; so a file from elsewhere is opened without blocking and used only if it
is a regular file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import IO, Any

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


MAX_JSON_DEPTH = 32
"""Deepest nesting of JSON accepted from elsewhere (a webhook's payload nests about 4 deep)."""
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(i for i in range(256) if i not in b"[]{}")


def loads_json(body: bytes | str, max_depth: int = MAX_JSON_DEPTH, source: object = "the body") -> Any:
    """`json.loads(body)`, refusing nesting deeper than `max_depth` before parsing.

    400 kB of nested brackets made `json.loads` raise RecursionError in the webhook receiver on
    38e5f82, and the client got no answer at all.

    Raises:
        UntrustedInput: Nested deeper than `max_depth` (a ValueError, as json's own errors are).
        ValueError: Not JSON (json.JSONDecodeError, UnicodeDecodeError).
    """
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if raw.count(b"[") + raw.count(b"{") > max_depth:  # else it cannot nest too deep: no scan
        depth = 0
        for byte in _STRINGS.sub(b"", raw).translate(None, _NOT_BRACKETS):
            depth += 1 if byte in b"[{" else -1
            if depth > max_depth:
                raise UntrustedInput(source, f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(body)
    except RecursionError as error:
        raise UntrustedInput(source, "JSON nested too deep to parse") from error
