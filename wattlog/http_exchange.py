"""One HTTP request and its whole answer, within a total deadline and a size cap.

The DMTF Redfish client, grafana-client, the Pushgateway push and the OTLP exporter
read through urllib3 or urllib, whose timeouts bound each read, not the answer: a
server dripping a byte a second held them for ever. :func:`exchange` sends one request
with http.client and gives the whole exchange one deadline: a watchdog shuts the
socket down when it passes (the status line and headers included), and the body is
read by :func:`wattlog.http_body.read_body` under its cap. http.client itself refuses a
header line over 64 KiB or more than 100 headers.
"""

from __future__ import annotations

import email.message
import http.client
import io
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
import urllib.response
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from wattlog.errors import UntrustedInput
from wattlog.http_body import MAX_BODY_BYTES, read_body
from wattlog.masking import mask


@dataclass(frozen=True, slots=True)
class Answer:
    """A server's whole answer: status, reason, headers in order, body."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


@dataclass(frozen=True, slots=True)
class Bounds:
    """How long one exchange may take and how much of an answer is read."""

    timeout_s: float = 10.0
    """Seconds for the whole exchange: connect, request, status line, headers and body."""
    max_bytes: int = MAX_BODY_BYTES
    """Largest body accepted."""


def exchange(  # noqa: PLR0913 - one request's parts, as http.client takes them
    method: str,
    url: str,
    *,
    headers: Iterable[tuple[str, str]] = (),
    body: bytes | None = None,
    bounds: Bounds = Bounds(),
    tls: ssl.SSLContext | None = None,
    proxy: str | None = None,
    source: object = None,
    clock: Callable[[], float] = time.monotonic,
) -> Answer:
    """Send one request to `url` and read its whole answer within `bounds`.

    Args:
        method: GET, POST, PUT, DELETE...
        url: http:// or https:// URL.
        headers: Request headers.
        body: Request body.
        bounds: The total deadline and the body cap.
        tls: Context for https (default: the system's, verified).
        proxy: http:// URL of a proxy to go through, if any.
        source: Named in a refusal (pass the URL with secrets masked; default the host).
        clock: Monotonic seconds.

    Raises:
        UntrustedInput: The answer did not end within the deadline, or its body or headers are too long.
        OSError: The server could not be reached, or closed the connection early.
        http.client.HTTPException: The answer is not HTTP.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UntrustedInput(url, "only http:// and https:// URLs are opened")
    source = source or f"the server at {parts.scheme}://{parts.netloc.rpartition('@')[2]}"
    deadline = clock() + bounds.timeout_s
    conn = _connection(parts.scheme, parts.netloc, proxy, tls, bounds.timeout_s)
    origin_form = parts._replace(scheme="", netloc="", fragment="").geturl() or "/"
    path = url if proxy and parts.scheme == "http" else origin_form
    try:
        conn.connect()
        cut = _Watchdog(conn.sock, deadline - clock())
        try:
            conn.request(method, path, body=body, headers=dict(headers))
            response = conn.getresponse()
            data = read_body(
                response, deadline=deadline, max_bytes=bounds.max_bytes, source=source, clock=clock
            )
        except (OSError, http.client.HTTPException) as error:
            if cut.fired or clock() >= deadline:
                raise _too_late(source) from error
            if isinstance(error, http.client.HTTPException) and "header" in str(error):
                raise UntrustedInput(source, f"its headers are too long ({error})") from error
            raise
        finally:
            cut.cancel()
        if cut.fired:  # the body may have looked complete when the socket was shut down
            raise _too_late(source)
        return Answer(response.status, response.reason, response.getheaders(), data)
    finally:
        conn.close()


def open_url(
    request: urllib.request.Request | str, timeout: float | None = None, *, max_bytes: int = MAX_BODY_BYTES
) -> Any:
    """`urllib.request.urlopen`'s stand-in for clients that take an opener: the same answers and
    errors (HTTPError at 400 and over, URLError when unreachable), the whole answer read by
    :func:`exchange` within `timeout` (10 s if None) and under `max_bytes`.

    Raises:
        UntrustedInput: As :func:`exchange` (too slow, too long).
        urllib.error.HTTPError: The server answered 400 or over.
        urllib.error.URLError: It could not be reached, or its answer is not HTTP.
    """
    if isinstance(request, str):
        request = urllib.request.Request(request)  # noqa: S310 - exchange opens only http(s)
    url, data = request.full_url, request.data
    body = data if isinstance(data, bytes) else None
    try:
        answer = exchange(
            request.get_method(),
            url,
            headers=request.header_items(),
            body=body,
            bounds=Bounds(timeout or 10.0, max_bytes),
            source=mask(url),
        )
    except (OSError, http.client.HTTPException) as error:
        raise urllib.error.URLError(error) from error
    headers = email.message.Message()
    for name, value in answer.headers:
        headers[name] = value
    if answer.status >= 400:
        raise urllib.error.HTTPError(url, answer.status, answer.reason, headers, io.BytesIO(answer.body))
    return urllib.response.addinfourl(io.BytesIO(answer.body), headers, url, answer.status)


def _connection(
    scheme: str, netloc: str, proxy: str | None, tls: ssl.SSLContext | None, timeout_s: float
) -> http.client.HTTPConnection:
    """The connection to the server, or to the proxy (a CONNECT tunnel for https)."""
    host = netloc.rpartition("@")[2]
    via = urlsplit(proxy).netloc.rpartition("@")[2] if proxy else host
    if scheme == "http":
        return http.client.HTTPConnection(via, timeout=timeout_s)
    context = tls or ssl.create_default_context()
    conn = http.client.HTTPSConnection(via, timeout=timeout_s, context=context)
    if proxy:
        conn.set_tunnel(host)
    return conn


def _too_late(source: object) -> UntrustedInput:
    return UntrustedInput(source, "its answer did not end within the deadline")


class _Watchdog:
    """Shuts `sock` down after `after_s` seconds, ending any read blocked on it."""

    def __init__(self, sock: socket.socket | None, after_s: float) -> None:
        self.fired = False
        self._sock = sock
        self._timer = threading.Timer(max(after_s, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed: nothing left to end
                return

    def cancel(self) -> None:
        self._timer.cancel()
