"""The soak's outside services, on loopback, each able to answer late: a node's BMC and an intensity provider.

- :class:`BmcEmulator`: a Redfish service over the test mockup (tests/data/redfish), one per
  node. By default its EnvironmentMetrics give power only (sampled, as many BMCs do: a stretch
  without answers is a gap); with ``counter=True`` its chassis energy counter grows at the
  mockup's 1,412 W (a counter bridges such a stretch exactly: no gap). ``slow_s`` > 0 makes
  every answer wait that long (the "bmc slow" fault: past the agent's read deadline,
  BmcConfig.timeout_s + 1 s).
- :class:`IntensityProvider`: the UK grid API's ``/intensity/FROM/TO`` at 100 g/kWh per half
  hour; ``slow_s`` > 0 makes every answer wait (the "provider slow" fault, past the 10 s budget
  of the fetch at a run's close).

The agents reach them through the environment (WATTLOG_REDFISH_URL; the provider's address
through bench/soak_node.py's seam, SOAK_PROVIDER_URL).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MOCKUP = Path(__file__).parents[1] / "tests" / "data" / "redfish"
ENERGY_URI = "/redfish/v1/Chassis/1U/Sensors/TotalEnergy"
ENV_URI = "/redfish/v1/Chassis/1U/EnvironmentMetrics"
NODE_W = 1412.0
"""The mockup's chassis input power (TotalPower, EnvironmentMetrics.PowerWatts)."""


class _Service:
    """A threading HTTP server on 127.0.0.1 answering `answer(path)` (status, JSON), after `slow_s`."""

    def __init__(self, answer: Callable[[str], tuple[int, Any]]) -> None:
        self.slow_s = 0.0
        self.answered = 0
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if service.slow_s > 0:
                    time.sleep(service.slow_s)  # the fault: a late answer (one thread per request)
                status, body = answer(self.path.split("?")[0].rstrip("/") or "/")
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:  # the client gave up waiting (its deadline): nothing to answer
                    return
                service.answered += 1

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @contextmanager
    def slow(self, seconds: float) -> Iterator[None]:
        """Every answer `seconds` late while inside."""
        self.slow_s = seconds
        try:
            yield
        finally:
            self.slow_s = 0.0

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


class BmcEmulator(_Service):
    """A node's Redfish service over the mockup: power only, or an energy counter growing at NODE_W."""

    def __init__(
        self, mockup: Path = MOCKUP, clock: Callable[[], float] = time.monotonic, counter: bool = False
    ) -> None:
        self._mockup, self._clock, self._counter = mockup, clock, counter
        self._t0_s = clock()
        super().__init__(self._answer)

    def _answer(self, path: str) -> tuple[int, Any]:
        file = self._mockup / path.removeprefix("/").removeprefix("redfish/v1").strip("/") / "index.json"
        if path in ("/", "/redfish"):
            return 200, {"v1": "/redfish/v1/"}
        if not file.resolve().is_relative_to(self._mockup.resolve()) or not file.exists():
            return 404, {"error": {"code": "Base.1.0.ResourceMissingAtURI", "message": path}}
        body = json.loads(file.read_text(encoding="utf-8"))
        kwh = float(
            json.loads((self._mockup / "Chassis/1U/Sensors/TotalEnergy/index.json").read_text())["Reading"]
        )
        kwh += NODE_W * (self._clock() - self._t0_s) / 3.6e6
        if path == ENERGY_URI:
            body["Reading"] = kwh
        elif path == ENV_URI and self._counter:
            body["EnergykWh"]["Reading"] = kwh
        elif path == ENV_URI:
            del body["EnergykWh"]  # power only: the node meter is sampled
        return 200, body


def _iso(t_s: int) -> str:
    return datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%dT%H:%MZ")


def _half_hours(path: str) -> tuple[int, Any]:
    """The UK grid API's /intensity/FROM/TO: every half hour of the span at 100 g/kWh."""
    parts = path.split("/")
    if len(parts) != 4 or parts[1] != "intensity":
        return 404, {"error": {"code": "404", "message": path}}
    t, stop = (int(datetime.fromisoformat(x.replace("Z", "+00:00")).timestamp()) for x in parts[2:])
    t -= t % 1800
    halves = []
    while t < stop:
        halves.append({"from": _iso(t), "to": _iso(t + 1800), "intensity": {"forecast": 100, "actual": 100}})
        t += 1800
    return 200, {"data": halves}


class IntensityProvider(_Service):
    """A UK grid carbon-intensity API on loopback (a site's live provider, source "ukgrid")."""

    def __init__(self) -> None:
        super().__init__(_half_hours)


SITES = """\
[sites.soaksite]
pue = 1.2
wue_onsite_l_per_kwh = 0.0
wue_offsite_l_per_kwh = 1.29
carbon_intensity_kg_per_kwh = 0.3

[sites.soaksite.intensity]
source = "ukgrid"
zone = "GB"
"""
"""The soak's site (its live provider is :class:`IntensityProvider`); written to WATTLOG_SITES_FILE."""
