"""HTTP servers that answer every request under load: a real listen backlog and bounded worker threads.

The standard library's servers listen with a backlog of 5 and start one
thread per connection. Under a burst (200 webhook posts, 500 scrapes) the
kernel then resets connections it has no room to queue, and the threads are
unbounded. :class:`BoundedThreadingMixIn` listens with a backlog of 128 or
more, hands connections to a fixed pool of workers, queues a bounded number
beyond them, and answers the rest at once with ``503 Service Unavailable``
and ``Retry-After``, so every client gets an answer it can act on.

Standard library only: telemetry (the metrics endpoint) and dashboards (the
webhook receiver) both use it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import HTTPServer
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

BACKLOG = 128
"""Connections the kernel queues before accept(): at least 128 (the stdlib default is 5)."""
WORKERS = 16
"""Requests handled at once."""
WAITING = 512
"""Accepted connections queued for a worker; past it, each is answered 503 at once."""
_BODY = b'{"error": "busy: retry in 1 s"}'
_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(_BODY)}\r\nConnection: close\r\n\r\n".encode()
    + _BODY
)


class BoundedThreadingMixIn:
    """Mix into a socketserver TCP server (before it) for a pool of workers and a real backlog.

    Attributes:
        request_queue_size: The listen backlog.
        workers: Size of the worker pool.
        waiting: Accepted connections that may wait for a worker.
    """

    request_queue_size = BACKLOG
    workers = WORKERS
    waiting = WAITING
    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._slots = threading.BoundedSemaphore(self.workers + self.waiting)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="wattlog-http")
        self.refused = 0
        super().__init__(*args, **kwargs)

    # `request` is typed as socketserver's own (a socket, or a datagram and its socket): this mixin
    # serves TCP servers only, whose request is the connection's socket.
    def process_request(self, request: Any, client_address: Any) -> None:
        """Queue the connection for a worker, or answer 503 when the queue is full."""
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            _refuse(request)
            self.shutdown_request(request)  # type: ignore[attr-defined]
            return
        try:
            self._pool.submit(self._work, request, client_address)
        except RuntimeError:  # the pool is shut down: the server is closing
            self._slots.release()
            self.shutdown_request(request)  # type: ignore[attr-defined]

    def _work(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)  # type: ignore[attr-defined]
        except Exception:
            self.handle_error(request, client_address)  # type: ignore[attr-defined]
        finally:
            self.shutdown_request(request)  # type: ignore[attr-defined]
            self._slots.release()

    def server_close(self) -> None:
        """Close the listening socket, then let the workers finish what they hold."""
        super().server_close()  # type: ignore[misc]
        self._pool.shutdown(wait=True, cancel_futures=False)


def _refuse(request: socket.socket) -> None:
    """Answer 503 without a worker; read what the client sent first, so closing does not reset it."""
    with contextlib.suppress(OSError):
        request.settimeout(0.2)
        request.recv(65536)
        request.sendall(_REFUSAL)


class BoundedHTTPServer(BoundedThreadingMixIn, HTTPServer):
    """An http.server with a real backlog and bounded workers (the webhook receiver)."""


class BoundedWSGIServer(BoundedThreadingMixIn, WSGIServer):
    """A wsgiref server with a real backlog and bounded workers (the metrics endpoint)."""


class QuietWSGIHandler(WSGIRequestHandler):
    """A WSGI handler that does not log every request to stderr."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (wsgiref's name)
        """Log nothing."""


def family_of(host: str) -> socket.AddressFamily:
    """AF_INET6 for an IPv6 literal, else AF_INET."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET
