"""Where a server's accepted connections wait, off its workers, until their whole request arrived.

One selector thread reads every waiting connection as its bytes come (never blocking), so
a client that sends nothing, or drips its request a byte a second, holds no worker: 16 of
them delayed a scrape of the agent's exporter by ~27 s when each was read on a worker.
A connection whose request is not whole ``idle_timeout_s`` after it was accepted is dropped.
The worker reads the request from what was buffered (:class:`_Prebuffered`), then the socket.
Used by :mod:`wattlog.serving` (the metrics endpoint, the webhook receiver).
"""

from __future__ import annotations

import contextlib
import io
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

MAX_BUFFERED = 1 << 20
"""A request larger (head and body) goes to a worker once this much arrived (the handler refuses it)."""
_LENGTH = re.compile(rb"\r?\ncontent-length:[ \t]*(\d{1,12})[ \t]*\r?\n", re.IGNORECASE)


class WaitingRoom:
    """Accepted connections wait here, in one selector thread, until their whole request arrived.

    Each is read as its bytes come (never blocking: one slow client holds nobody), and goes to
    a worker with what was read (:class:`_Prebuffered`) once it holds a request (:func:`_whole`).

    Args:
        ready: Called with (connection, address) once its request arrived: it goes to a worker.
        drop: Called with a connection whose request was not whole `idle_timeout_s` after it was
            accepted, that closed before it was, or that was still waiting at close.
        idle_timeout_s: How long a connection may take, from its accept, to send its whole request.
        tick: Called with the monotonic time about once a second (the server's request deadlines).
    """

    def __init__(
        self,
        ready: Callable[[tuple[socket.socket, Any]], None],
        drop: Callable[[socket.socket], None],
        idle_timeout_s: float,
        tick: Callable[[float], None],
    ) -> None:
        self._tick = tick
        self._ready = ready
        self._drop = drop
        self._idle_timeout_s = idle_timeout_s
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._arrived: list[tuple[socket.socket, Any]] = []
        self._lock = threading.Lock()
        self._closing = False
        self._thread = threading.Thread(target=self._loop, name="wattlog-http-wait", daemon=True)
        self._thread.start()

    def add(self, request: socket.socket, client_address: Any) -> None:
        """Let `request` wait for its whole request (thread-safe)."""
        with self._lock:
            self._arrived.append((request, client_address))
        self._wake()

    @property
    def thread(self) -> threading.Thread:
        """The selector thread (joined by whoever closes the room)."""
        return self._thread

    def close(self) -> None:
        """Drop every waiting connection and stop the thread (at once: it is woken)."""
        with self._lock:
            self._closing = True
        self._wake()

    def _read(self, request: socket.socket, data: tuple[Any, float, bytearray]) -> None:
        """Take what `request` sent; hand it to a worker once its request is whole, drop it if it closed."""
        client_address, _, buffer = data
        try:
            chunk = request.recv(65536, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if chunk:
            buffer += chunk
            if not _whole(buffer):
                return
        self._selector.unregister(request)
        if chunk:
            self._ready((_Prebuffered(request, bytes(buffer)), client_address))  # type: ignore[arg-type]
        else:  # closed (or reset) before its request was whole: nothing to answer
            self._drop(request)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def _loop(self) -> None:
        closing = False
        while not closing:
            events = self._selector.select(timeout=min(1.0, self._idle_timeout_s))
            with self._lock:
                arrived, self._arrived = self._arrived, []
                closing = self._closing
            now = time.monotonic()
            self._tick(now)
            for request, client_address in arrived:
                try:
                    self._selector.register(
                        request,
                        selectors.EVENT_READ,
                        (client_address, now + self._idle_timeout_s, bytearray()),
                    )
                except (OSError, ValueError):  # closed before it could wait: this thread must live on
                    self._drop(request)
            for key, _ in events:
                if key.data is None:
                    with contextlib.suppress(OSError):
                        self._wake_r.recv(4096)
                elif not closing:
                    self._read(key.fileobj, key.data)  # type: ignore[arg-type]
            for key in list(self._selector.get_map().values()):
                if key.data is not None and (closing or key.data[1] <= now):
                    self._selector.unregister(key.fileobj)
                    self._drop(key.fileobj)  # type: ignore[arg-type]
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()


def _whole(buffer: bytearray) -> bool:
    """Whether `buffer` holds a whole request: its head, and the body its Content-Length names.

    >>> _whole(bytearray(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n")), _whole(bytearray(b"GET /\\r\\n\\r\\n"))
    (False, True)
    >>> post = b"POST / HTTP/1.1\\r\\nContent-Length: 4\\r\\n\\r\\n"
    >>> _whole(bytearray(post + b"ab")), _whole(bytearray(post + b"abcd"))
    (False, True)
    """
    if len(buffer) >= MAX_BUFFERED:
        return True
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return False
    length = _LENGTH.search(buffer, 0, end + 2)
    return length is None or len(buffer) >= end + 4 + int(length.group(1))


class _Prebuffered:
    """A connection whose first bytes the waiting room already read: its reads start with them.

    Everything else (sendall, settimeout, shutdown, close, ...) is the socket's own.
    """

    def __init__(self, sock: socket.socket, head: bytes) -> None:
        self._sock = sock
        self._head = head

    def makefile(self, mode: str = "r", buffering: int | None = None, **kwargs: Any) -> Any:
        """The socket's file; a reading one first yields the bytes already read."""
        if "r" not in mode:
            return self._sock.makefile(mode, buffering, **kwargs)  # type: ignore[call-overload]
        raw = _HeadThenSocket(self._head, self._sock.makefile("rb", buffering=0))
        self._head = b""
        return io.BufferedReader(raw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _HeadThenSocket(io.RawIOBase):
    """Reads `head`, then the socket's raw file."""

    def __init__(self, head: bytes, rest: Any) -> None:
        super().__init__()
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        """Yes."""
        return True

    def readinto(self, b: Any) -> int:
        """Fill `b` from the head first, then from the socket."""
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return int(self._rest.readinto(b) or 0)

    def close(self) -> None:
        """Close the socket's file too."""
        self._rest.close()
        super().close()
