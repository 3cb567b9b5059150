"""A loopback HTTP server whose answer never ends: dripping a byte at a time, or flooding."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"


HUGE_HEAD = HEAD.replace(b"\r\n\r\n", b"\r\nX-Filler: " + b"x" * (1 << 20) + b"\r\n\r\n")
"""Headers with one 1 MiB line (http.client accepts 64 KiB)."""


@contextmanager
def endless_server(
    *, flood: bool = False, every_s: float = 0.2, head: bytes = HEAD, drip_head: bool = False
) -> Iterator[str]:
    """Its base URL; each connection gets `head` (a byte every `every_s` if `drip_head`), then
    chunks for ever (until the test ends)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            try:
                for piece in [head[i : i + 1] for i in range(len(head))] if drip_head else [head]:
                    conn.sendall(piece)
                    if drip_head and stop.wait(every_s):
                        return
            except OSError:  # the client refused a huge head before its end
                return
            piece = b"%x\r\n%s\r\n" % (65536, b" " * 65536) if flood else b"1\r\n \r\n"
            while not stop.is_set():
                try:
                    conn.sendall(piece)
                except OSError:
                    return
                if not flood:
                    stop.wait(every_s)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        stop.set()
        listener.close()
