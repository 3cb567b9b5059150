"""Reading an HTTP answer from elsewhere within a total deadline and a size cap.

A socket timeout bounds the connect and each read, not the answer: a server
that drips a byte a second, or sends an endless body fast, kept `wattlog run`
alive for ever on 38e5f82 (a fast one grew it from 22 to 1,066 MiB in 25 s).
Every client reads bodies through :func:`read_body`: in pieces, each read given
at most the time left, refused past the deadline or the cap.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from wattlog.errors import UntrustedInput

MAX_BODY_BYTES = 64 << 20
"""The largest answer any client reads (a year of hourly intensity is ~2 MB of JSON)."""
_PIECE = 1 << 16


def read_body(
    response: Any,
    *,
    deadline: float,
    max_bytes: int = MAX_BODY_BYTES,
    source: object = "the server",
    clock: Callable[[], float] = time.monotonic,
) -> bytes:
    """The whole body of `response` (an http.client.HTTPResponse or any file-like), bounded.

    Args:
        response: What an urlopen-compatible opener returned.
        deadline: `clock()` value by which the body must have ended.
        max_bytes: Largest body accepted.
        source: Named in the refusal (a URL; pass it with secrets masked).
        clock: Monotonic seconds.

    Raises:
        UntrustedInput: The body did not end by the deadline or is longer than `max_bytes`.
    """
    read = getattr(response, "read1", None) or response.read
    pieces: list[bytes] = []
    size = 0
    while True:
        left = deadline - clock()
        if left <= 0:
            raise UntrustedInput(source, f"its answer did not end within the deadline ({size:,} bytes read)")
        _limit_wait(response, left)
        try:
            piece = read(min(_PIECE, max_bytes + 1 - size))
        except TimeoutError as error:
            raise UntrustedInput(
                source, f"its answer did not end within the deadline ({size:,} bytes read)"
            ) from error
        if not piece:
            return b"".join(pieces)
        size += len(piece)
        if size > max_bytes:
            raise UntrustedInput(source, f"its answer is longer than {max_bytes:,} bytes")
        pieces.append(piece)


def _limit_wait(response: Any, left: float) -> None:
    """Give the next read of the response's socket at most `left` seconds (best effort)."""
    raw = getattr(getattr(response, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)  # http.client: fp is a BufferedReader over socket.SocketIO
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.settimeout(max(left, 0.001))
