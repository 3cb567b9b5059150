"""The agent's /metrics endpoint: a bounded HTTP server in a daemon thread (see wattlog.serving).

A response counts as a scrape only once it has been written in full: :func:`serve` tells the
agent's state collector so (its `written` callback), so the final-scrape linger ends on a scrape
Prometheus received, not on a collector run that went nowhere.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from wattlog.errors import ConfigError
from wattlog.serving import BoundedWSGIServer, QuietWSGIHandler, family_of

__all__ = ["MetricsServer", "serve"]


@dataclass
class MetricsServer:
    """A running /metrics HTTP server; `close()` stops it and frees the port."""

    server: BoundedWSGIServer
    thread: threading.Thread
    host: str

    @property
    def port(self) -> int:
        """The bound port (the picked one when 0 was asked for)."""
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        """Address of the metrics endpoint, e.g. http://127.0.0.1:9464/metrics."""
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> tuple[str, ...]:
        """Stop serving, close the socket and verify the threads stopped.

        Returns:
            Names of threads still running after the server's close timeout (each logged as a
            warning: a scrape handler stuck on a slow client); empty when all stopped.
        """
        return self.server.stop(self.thread)


def serve(
    registry: CollectorRegistry,
    host: str = "127.0.0.1",
    port: int = 9464,
    written: Callable[[], None] | None = None,
) -> MetricsServer:
    """Serve `registry` on http://host:port/metrics in a daemon thread.

    Args:
        registry: The agent's own registry.
        host: Address to bind; loopback by default, so nothing is exposed unless asked.
        port: TCP port; 0 picks a free one (read it back from `.port`).
        written: Called in the serving thread once a response has been written in full
            (:meth:`AgentStateCollector.written`); never for a response the client did not take.

    Returns:
        The running server (a listen backlog of 128, bounded worker threads).

    Raises:
        ConfigError: The port is taken or the address cannot be bound.
    """
    # a backlog of 128 and bounded workers: a burst of scrapes is queued or answered 503, never reset
    server_class: type[BoundedWSGIServer] = type(
        "MetricsHTTPServer", (BoundedWSGIServer,), {"address_family": family_of(host)}
    )
    app = make_wsgi_app(registry) if written is None else _confirming(make_wsgi_app(registry), written)
    try:
        server = make_server(host, port, app, server_class, handler_class=QuietWSGIHandler)
    except OSError as error:
        raise ConfigError(
            f"cannot serve metrics on {host}:{port}: {error}; pick another port (--port, 0 = any free one)"
        ) from error
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), name="wattlog-metrics", daemon=True)
    thread.start()
    return MetricsServer(server=server, thread=thread, host=host)


def _confirming(app: Any, written: Callable[[], None]) -> Any:
    """`app` whose responses call `written` after their last byte was handed to the socket."""

    def confirmed(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        body = app(environ, start_response)

        def chunks() -> Iterator[bytes]:
            yield from body
            # reached only when the server asks for more after writing every chunk: a write
            # that failed (the client went away) raised inside the server instead
            written()

        return chunks()

    return confirmed
