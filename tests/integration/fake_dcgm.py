"""A small stand-in for NVIDIA's dcgm-exporter on 127.0.0.1: GPUs drawing constant power, one that resets.

It serves what dcgm-exporter serves for the energy field: the counter in millijoules since the
driver loaded, labelled gpu, UUID, device, modelName, Hostname (and hpc_job with job mapping).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HEADER = (
    "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n"
    "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
)


@dataclass(frozen=True)
class FakeGpu:
    """One GPU: constant power; its counter restarts from 0 at `reset_at_s` (Unix s) if given."""

    host: str
    index: int
    uuid: str
    power_w: float
    job: str = ""
    reset_at_s: float | None = None

    def energy_mj(self, t0_s: float, now_s: float) -> float:
        since = self.reset_at_s if self.reset_at_s is not None and now_s >= self.reset_at_s else t0_s
        return self.power_w * (now_s - since) * 1000.0


class FakeDcgmExporter:
    """Serves /metrics for `gpus`, their counters starting at `t0_s`."""

    def __init__(self, gpus: list[FakeGpu], t0_s: float) -> None:
        self.gpus, self.t0_s = gpus, t0_s
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = exporter.render(time.time()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        """host:port to scrape."""
        return f"127.0.0.1:{self._server.server_address[1]}"

    def render(self, now_s: float) -> str:
        """The exposition text at `now_s`."""
        lines = [HEADER]
        for g in self.gpus:
            job = f',hpc_job="{g.job}"' if g.job else ""
            labels = (
                f'gpu="{g.index}",UUID="{g.uuid}",device="nvidia{g.index}",modelName="NVIDIA H100 80GB HBM3",'
                f'Hostname="{g.host}"{job}'
            )
            lines.append(
                f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {g.energy_mj(self.t0_s, now_s):.0f}\n"
            )
        return "".join(lines)

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
