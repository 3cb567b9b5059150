"""Fault: a Redfish BMC, a Grafana, a Pushgateway or an OTLP collector whose answer never ends.

On 18aee5b these four clients read through urllib3 or urllib with a timeout per read:
a body dripping a byte a second (under the timeout) held each of them for ever, and an
endless fast body grew the process without bound. Now each whole answer has one
deadline (the client's timeout) and a size cap (wattlog/http_exchange.py): each hostile
server below is refused in one line within that deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from tests.dashboards.test_notify import EVENT
from tests.faults.endless_server import HUGE_HEAD, endless_server
from tests.faults.test_endless_answers import within
from tests.telemetry.test_otlp import row
from wattlog.accounting.publishing.prometheus_energy import energy_counted
from wattlog.dashboards.notify import Notifier
from wattlog.dashboards.provision import Provisioner, connect
from wattlog.errors import WattlogError
from wattlog.records import Kind
from wattlog.telemetry.exporter import push
from wattlog.telemetry.otlp import OtlpConfig, OtlpExport
from wattlog.telemetry.sensors.bmc import BmcConfig
from wattlog.telemetry.sensors.redfish_node import RedfishNodeSensor
from wattlog.trainer.join import read_counters

DEADLINE_S = 1.5  # over the drip's second: a timeout per read never fires
HOSTILE = {
    "endless": {"flood": True},
    "dripping": {"every_s": 1.0},
    "huge header": {"head": HUGE_HEAD},
    "dripping header": {"every_s": 1.0, "drip_head": True},
}
REFUSED = ("did not end within the deadline", "longer than", "headers are too long")


def _redfish(url: str) -> Any:
    return RedfishNodeSensor(BmcConfig(redfish_url=url.rstrip("/"), timeout_s=DEADLINE_S)).devices()


def _grafana(url: str) -> Any:
    return Provisioner(connect(url, environ={"GRAFANA_TOKEN": "t"}, timeout_s=DEADLINE_S)).run()


def _pushgateway(url: str) -> Any:
    registry = CollectorRegistry()
    Counter("wattlog_test", "a test counter", registry=registry).inc()
    return push(registry, url, job="wattlog", timeout_s=DEADLINE_S)


CLIENTS: dict[str, tuple[Callable[[str], Any], float]] = {
    # the DMTF client tries twice, a second apart
    "redfish": (_redfish, 2 * DEADLINE_S + 1),
    "grafana": (_grafana, DEADLINE_S),
    "pushgateway": (_pushgateway, DEADLINE_S),
}


@pytest.mark.parametrize("server", HOSTILE)
@pytest.mark.parametrize("client", CLIENTS)
def test_a_hostile_answer_is_refused_in_one_line_within_the_deadline(client: str, server: str) -> None:
    call, deadline_s = CLIENTS[client]
    with endless_server(**HOSTILE[server]) as url:
        error, took_s = within(30, lambda: call(url))
    assert isinstance(error, WattlogError), error
    line = str(error)
    assert "\n" not in line and any(why in line for why in REFUSED), line
    assert took_s < deadline_s + 1.5, f"{took_s:.1f} s"


@pytest.mark.parametrize("server", HOSTILE)
def test_an_otlp_collectors_hostile_answer_fails_the_export_within_the_deadline(server: str) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.metric_exporter")
    with endless_server(**HOSTILE[server]) as url:
        config = OtlpConfig(url + "v1/metrics", interval_s=3600.0, timeout_s=DEADLINE_S)
        rows = [row("GPU-a", Kind.GPU, 1000.0, 350.0)]
        export = OtlpExport(lambda: rows, host="node1", config=config).start()
        started = time.monotonic()
        try:
            ok, _ = within(30, export.collect_now)
        finally:
            export.close()
    assert ok is False
    assert time.monotonic() - started < 2 * DEADLINE_S + 3  # the flush, then close()'s last export


OPENER_CLIENTS: dict[str, Callable[[str], Any]] = {
    "prometheus query": lambda url: energy_counted(url, 0.0, 60.0, timeout_s=DEADLINE_S),
    "webhook": lambda url: Notifier(url, attempts=1, timeout_s=DEADLINE_S).send(EVENT),
    "node agent scrape": lambda url: read_counters(url, ["gpu0"], timeout_s=DEADLINE_S),
}


@pytest.mark.parametrize("client", OPENER_CLIENTS)
def test_a_head_dripping_a_byte_a_second_is_cut_for_urlopen_clients(client: str) -> None:
    # urlopen bounded each read of the status line and headers, not all of them (18aee5b: held for ever)
    with endless_server(every_s=1.0, drip_head=True) as url:
        error, took_s = within(30, lambda: OPENER_CLIENTS[client](url))
    assert isinstance(error, WattlogError) and "did not end within the deadline" in str(error), error
    assert took_s < DEADLINE_S + 1.5, f"{took_s:.1f} s"
