"""HTTP servers that answer every request under load: a real listen backlog and bounded worker threads.

The standard library's servers listen with a backlog of 5 and start one
thread per connection. Under a burst (200 webhook posts, 500 scrapes) the
kernel then resets connections it has no room to queue, and the threads are
unbounded. :class:`BoundedThreadingMixIn` listens with a backlog of 128 or
more, hands connections to a fixed pool of workers, queues a bounded number
beyond them, and answers the rest at once with ``503 Service Unavailable``
and ``Retry-After``, so every client gets an answer it can act on.

Nobody can hold such a server hostage. An accepted connection waits off the workers, in one
selector thread that reads every waiting connection as its bytes come, until its whole
request (head, and a body of up to ``MAX_BUFFERED`` bytes) has arrived, at most
``idle_timeout_s`` after it was accepted: idle clients, and clients dripping their request a
byte a second, hold no worker, so 16 of them delay a scrape or a webhook post by nothing
(16 drippers held all 16 workers for ~27 s before). A request being handled reads and writes
under ``connection_timeout_s`` each, and a client still sending or reading after
``request_timeout_s`` has its connection shut, so slow readers hold a worker for a bounded time.
Closing drops the idle connections at once and never hangs on a handler that does not return:
it waits a bounded time, then logs the threads still running by name and reports them
(:meth:`~BoundedThreadingMixIn.stop`).

Standard library only: telemetry (the metrics endpoint) and dashboards (the
webhook receiver) both use it.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import time
from collections.abc import Sequence
from http.server import HTTPServer
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from wattlog.waiting_room import WaitingRoom

log = logging.getLogger(__name__)

BACKLOG = 128
"""Connections the kernel queues before accept(): at least 128 (the stdlib default is 5)."""
WORKERS = 16
"""Requests handled at once."""
WAITING = 512
"""Accepted connections queued for a worker; past it, each is answered 503 at once."""
CLOSE_TIMEOUT_S = 5.0
"""How long closing waits for the serving thread and for the requests being handled."""
IDLE_TIMEOUT_S = 10.0
"""How long an accepted connection may take to send its whole request before it is closed."""
CONNECTION_TIMEOUT_S = 5.0
"""Each read and write of a request being handled: a stalled client frees its worker after this."""
REQUEST_TIMEOUT_S = 30.0
"""A whole request, from a worker taking it: past this its connection is shut (a dripping client)."""
_BODY = b'{"error": "busy: retry in 1 s"}'
_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(_BODY)}\r\nConnection: close\r\n\r\n".encode()
    + _BODY
)


class BoundedThreadingMixIn:
    """Mix into a socketserver TCP server (before it) for a pool of workers and a real backlog.

    Closing waits for the workers at most ``close_timeout_s``: a handler that never returns
    (a ledger that hangs, a client that stalls) is logged as a warning naming its thread and
    listed in :attr:`stuck`, and closing goes on. The workers are daemon threads, so one left
    running cannot keep the process from exiting.

    Attributes:
        request_queue_size: The listen backlog.
        workers: Size of the worker pool.
        waiting: Accepted connections that may wait for a worker.
        close_timeout_s: How long closing waits for the serving thread and the workers.
        idle_timeout_s: How long a connection may take to send its request (read off the workers).
        connection_timeout_s: Each socket read or write of a request being handled.
        request_timeout_s: A whole request being handled; past it the connection is shut.
        refused: Connections answered 503 because the queue was full.
        stuck: Names of the threads still running when the last close gave up on them.
    """

    request_queue_size = BACKLOG
    workers = WORKERS
    waiting = WAITING
    close_timeout_s = CLOSE_TIMEOUT_S
    idle_timeout_s = IDLE_TIMEOUT_S
    connection_timeout_s = CONNECTION_TIMEOUT_S
    request_timeout_s = REQUEST_TIMEOUT_S
    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._slots = threading.BoundedSemaphore(self.workers + self.waiting)
        self._jobs: queue.SimpleQueue[tuple[socket.socket, Any] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._closing = False
        self._room: WaitingRoom | None = None
        self._handling: dict[socket.socket, float] = {}  # connection -> when its worker must be done
        self._handling_lock = threading.Lock()
        self.refused = 0
        self.stuck: tuple[str, ...] = ()
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
        if self._closing:
            self._slots.release()
            self.shutdown_request(request)  # type: ignore[attr-defined]
            return
        if self._room is None:  # started on the first request: constructing a server starts no thread
            self._threads = [
                threading.Thread(target=self._work, name=f"wattlog-http_{n}", daemon=True)
                for n in range(self.workers)
            ]
            for thread in self._threads:
                thread.start()
            self._room = WaitingRoom(self._jobs.put, self._drop, self.idle_timeout_s, self._shut_overdue)
        self._room.add(request, client_address)

    def _drop(self, request: socket.socket) -> None:
        """Close a connection that never reached a worker, and free its slot."""
        self.shutdown_request(request)  # type: ignore[attr-defined]
        self._slots.release()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            request, client_address = job
            with self._handling_lock:
                self._handling[request] = time.monotonic() + self.request_timeout_s
            try:
                request.settimeout(self.connection_timeout_s)
                self.finish_request(request, client_address)  # type: ignore[attr-defined]
            except OSError as error:  # a client that stalled, went away or was shut as overdue: no traceback
                log.debug("connection from %s dropped: %s", client_address, error)
            except Exception:
                self.handle_error(request, client_address)  # type: ignore[attr-defined]
            finally:
                with self._handling_lock:
                    self._handling.pop(request, None)
                self.shutdown_request(request)  # type: ignore[attr-defined]
                self._slots.release()

    def _shut_overdue(self, now_s: float) -> None:
        """Shut the connections of requests past request_timeout_s: their next read or write fails."""
        with self._handling_lock:
            overdue = [request for request, deadline in self._handling.items() if deadline <= now_s]
        for request in overdue:
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)

    def server_close(self) -> None:
        """Close the listening socket, then give the workers close_timeout_s to finish what they hold."""
        super().server_close()  # type: ignore[misc]
        self._closing = True
        with self._handling_lock:
            handling = list(self._handling)
        for request in handling:  # a stalled client's read ends now, not at its timeout; answers still go out
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RD)
        if self._room is not None:
            self._room.close()  # idle and dripping connections are dropped, not waited for
            join_threads([self._room.thread], self.close_timeout_s, "http waiting")
        for _ in self._threads:
            self._jobs.put(None)  # behind the queued connections: each is still answered
        self.stuck = join_threads(self._threads, self.close_timeout_s, f"{type(self).__name__} worker")
        self._threads = [thread for thread in self._threads if thread.is_alive()]

    def stop(self, thread: threading.Thread | None) -> tuple[str, ...]:
        """Stop `thread`'s serve_forever, close the socket, and verify that every thread stopped.

        Args:
            thread: The thread running ``serve_forever`` (None or never started: nothing to stop).

        Returns:
            Names of the threads still running after ``close_timeout_s`` each (logged as warnings);
            empty when all stopped.
        """
        if thread is not None and thread.is_alive():
            self.shutdown()  # type: ignore[attr-defined]  # prompt: serve_forever never runs a handler itself
        self.server_close()
        serving = () if thread is None else join_threads([thread], self.close_timeout_s, "serving")
        self.stuck = (*self.stuck, *serving)
        return self.stuck


def join_threads(threads: Sequence[threading.Thread], timeout_s: float, what: str) -> tuple[str, ...]:
    """Join `threads` within one deadline of `timeout_s`; warn about, and return, those still alive.

    Args:
        threads: Threads asked to stop (started or not).
        timeout_s: Seconds to wait for all of them together.
        what: What they are, for the warning (e.g. "webhook worker").

    Returns:
        Names of the threads still alive at the deadline, in the given order.
    """
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        if thread.ident is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
    alive = tuple(thread.name for thread in threads if thread.is_alive())
    if alive:
        log.warning(
            "%s thread(s) %s still running %.1f s after being asked to stop; left running",
            what,
            ", ".join(alive),
            timeout_s,
        )
    return alive


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
