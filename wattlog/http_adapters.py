"""Transport adapters that give requests and niquests sessions a total deadline and a body cap.

The DMTF Redfish client and the OTLP exporter send through a requests Session,
grafana-client through a niquests one; each takes its timeout per read. Mounting
:func:`bounded_session`'s adapter makes every request one :func:`~wattlog.http_exchange.exchange`:
the caller's timeout becomes the deadline of the whole answer, and no body over the cap
is held. A refusal is :class:`~wattlog.errors.UntrustedInput`; a server that cannot be
reached is the library's own ConnectionError, so its retries work as before.
"""

from __future__ import annotations

import http.client
import importlib
import io
import os
import ssl
from typing import Any

from wattlog.http_body import MAX_BODY_BYTES
from wattlog.http_exchange import Bounds, exchange
from wattlog.masking import mask


def bounded_session(session: Any, *, max_bytes: int = MAX_BODY_BYTES, timeout_s: float = 10.0) -> Any:
    """`session` (a requests or niquests Session) with every http(s) request bounded; returns it.

    Args:
        session: The Session to mount the adapter on.
        max_bytes: Largest answer body accepted.
        timeout_s: Deadline of a whole exchange when the caller gives no timeout.
    """
    adapter = bounded_adapter(type(session).__module__.split(".")[0], Bounds(timeout_s, max_bytes))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def bounded_adapter(library: str, bounds: Bounds) -> Any:
    """A transport adapter for `library` ("requests" or "niquests") sending through `exchange`."""
    lib = importlib.import_module(library)
    base = importlib.import_module(f"{library}.adapters").BaseAdapter

    class BoundedAdapter(base):  # type: ignore[misc, valid-type]
        def send(self, request: Any, stream: bool = False, timeout: Any = None, **options: Any) -> Any:
            return _send(lib, request, _bounds(bounds, timeout), options)

        def close(self) -> None:
            """Nothing to close: each exchange has its own connection."""

    return BoundedAdapter()


def _bounds(bounds: Bounds, timeout: Any) -> Bounds:
    """The caller's timeout (seconds, or a (connect, read) pair) as the whole exchange's deadline."""
    if isinstance(timeout, tuple):
        timeout = sum(part for part in timeout if isinstance(part, int | float)) or None
    if isinstance(timeout, int | float) and timeout > 0:
        return Bounds(float(timeout), bounds.max_bytes)
    return bounds


def _send(lib: Any, request: Any, bounds: Bounds, options: dict[str, Any]) -> Any:
    body = request.body
    if isinstance(body, str):
        body = body.encode()
    elif body is not None and not isinstance(body, bytes):
        body = b"".join(part if isinstance(part, bytes) else str(part).encode() for part in body)
    proxy = lib.utils.select_proxy(request.url, options.get("proxies") or {})
    try:
        answer = exchange(
            request.method,
            request.url,
            headers=request.headers.items(),
            body=body,
            bounds=bounds,
            tls=_tls(options.get("verify", True), options.get("cert")),
            proxy=proxy,
            source=mask(request.url),
        )
    except (OSError, http.client.HTTPException) as error:
        raise lib.exceptions.ConnectionError(f"{type(error).__name__}: {error}", request=request) from error
    response = lib.models.Response()
    response.status_code = answer.status
    response.reason = answer.reason
    response.headers = lib.structures.CaseInsensitiveDict(answer.headers)
    response.encoding = lib.utils.get_encoding_from_headers(response.headers)
    response._content = answer.body  # noqa: SLF001 - read whole, as requests does without stream
    response._content_consumed = True  # noqa: SLF001
    response.raw = io.BytesIO(answer.body)
    response.url = request.url
    response.request = request
    return response


def _tls(verify: Any, cert: Any) -> ssl.SSLContext:
    """The context requests' `verify` and `cert` options describe."""
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # asked for by the caller (the Redfish client's default)
    elif isinstance(verify, str):
        folder = os.path.isdir(verify)  # requests' REQUESTS_CA_BUNDLE may name either
        context = ssl.create_default_context(
            capath=verify if folder else None, cafile=None if folder else verify
        )
    else:
        context = ssl.create_default_context()
    if cert:
        certfile, keyfile = cert if isinstance(cert, tuple) else (cert, None)
        context.load_cert_chain(certfile, keyfile)
    return context
