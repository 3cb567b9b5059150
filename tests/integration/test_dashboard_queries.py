"""Every panel of the three dashboards returns data from a real Prometheus scraping a training demo.

The demo is a Tracker over two simulated GPUs, reporting what a mixed-precision trainer
reports (loss, tokens, grad norm, loss scale; FLOPs for MFU), its agent on a free loopback
port. Prometheus scrapes it with the shipped scrape settings (honor_labels, target labels host
and site), loads the shipped rules (footprint recording rules, site constants) and a small
exporter publishes the run's planned tokens and CO2 budget. Each panel's queries are then run
with the dashboard variables at "All"; every query must return at least one series. A non-finite
loss after the counters were first scraped at 0 shows the first event is counted by increase().
"""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Gauge

from tests.integration.conftest import Servers
from tests.waiting import wait_until
from wattlog.dashboards import build
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.exporter import serve
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.tracker import Tracker

pytestmark = pytest.mark.integration

RUN, SITE = "panel-demo", "jupiter"
HOST = socket.gethostname()
PROMETHEUS_DIR = Path(build.__file__).parent / "prometheus"
VARIABLES = {
    "$run": ".*",
    "$host": ".*",
    "$site": ".*",
    "$__interval": "1m",
    "$__rate_interval": "1m",
    "$__range": "1h",
}
NO_SUCH_EVENT = {"restarts"}
"""Annotations of events this demo never has (no run resumes): their query only has to parse."""


def queries() -> list[tuple[str, str, str]]:
    """(dashboard, panel or annotation, PromQL) of every query, variables at All."""
    out = []
    for name, make in build.BOARDS.items():
        board = make()
        items = [(p["title"], t["expr"]) for p in board["panels"] for t in p.get("targets", [])]
        items += [
            (a["name"], a["expr"])
            for a in board["annotations"]["list"]
            if "expr" in a and a["name"] not in NO_SUCH_EVENT
        ]
        for title, expr in items:
            for variable, value in VARIABLES.items():
                expr = expr.replace(variable, value)
            out.append((name, title, expr))
    return out


def mass_figure(expr: str) -> str:
    """The figure a query shows: a mass in tonnes comes as a kg query and a t query (panels.tonnes), of
    which one answers (kg below a tonne, t from a tonne): both count as one figure."""
    split = re.fullmatch(r"\((.*)\)(?: \* 1000)? and abs\(\1\) (?:<|>=) 1", expr)
    return split.group(1) if split else expr


def trainer_loop(tracker: Tracker, stop: threading.Event, nan_after_s: float) -> None:
    start = time.monotonic()
    nan_sent = False
    while not stop.is_set():
        if not nan_sent and time.monotonic() - start > nan_after_s:
            tracker.step(loss=float("nan"), tokens=512, grad_norm=1.0, loss_scale=32768.0)
            tracker.checkpoint()  # after the first scrapes, so increase() sees it
            nan_sent = True
        else:
            tracker.step(loss=2.5, tokens=512, grad_norm=1.0, loss_scale=65536.0)
        time.sleep(0.02)


def test_every_panel_of_the_three_dashboards_returns_data(servers: Servers, tmp_path: Path) -> None:
    plan = CollectorRegistry()
    Gauge("wattlog_run_planned_tokens", "Tokens the run will train on.", ["run"], registry=plan).labels(
        RUN
    ).set(1e9)
    Gauge("wattlog_run_co2_budget_tonnes", "CO2 budget.", ["run"], registry=plan).labels(RUN).set(10.0)
    planner = serve(plan, port=0)
    stop = threading.Event()
    tracker = Tracker(
        RUN,
        site=SITE,
        db=f"sqlite:///{tmp_path / 'ledger.db'}",
        log_every=5,
        gc_every=None,
        flops_per_token=6e6,
        peak_flops=1e12,
        sensors=[SimulatedSensor(simulated_gpus(2, t0_s=time.monotonic()))],
        agent_config=AgentConfig(port=0, flush_s=1.0, host=HOST, lock_dir=tmp_path / "locks"),
        environ={},
    )
    try:
        with tracker:
            assert tracker.agent is not None and tracker.agent.metrics_url is not None
            port = tracker.agent.metrics_url.split(":")[-1].split("/")[0]
            jobs = [
                {  # as dashboards/prometheus/prometheus.yml: the agent's own run and host labels kept
                    "job_name": "wattlog",
                    "honor_labels": True,
                    "static_configs": [
                        {"targets": [f"127.0.0.1:{port}"], "labels": {"host": HOST, "site": SITE}}
                    ],
                },
                {"job_name": "plans", "static_configs": [{"targets": [f"127.0.0.1:{planner.port}"]}]},
            ]
            # The site constants are evaluated once a minute as shipped: every second here, so the first
            # evaluation cannot fall up to a minute after the start.
            sites = tmp_path / "sites.rules.yml"
            sites.write_text(
                (PROMETHEUS_DIR / "sites.rules.yml").read_text().replace("interval: 1m", "interval: 1s")
            )
            prometheus = servers.prometheus(
                rule_files=[PROMETHEUS_DIR / "rules.yml", sites],
                extra_scrape_configs=jobs,
            )
            trainer = threading.Thread(target=trainer_loop, args=(tracker, stop, 6.0), daemon=True)
            trainer.start()
            prometheus.wait_for(
                f'increase(wattlog_train_events_total{{run="{RUN}", kind="non_finite"}}[1m]) > 0',
                timeout_s=60,
            )  # the first event of its kind counts: its counter was scraped at 0 before it
            prometheus.wait_for("wattlog:run_co2_projected_tonnes", timeout_s=30)
            prometheus.wait_for(
                "rate(wattlog_train_tokens_total[5m]) > 0 and wattlog_train_mfu_ratio", timeout_s=30
            )
            # Some panels need more history than the first scrapes give (a deriv() over a subquery
            # wants two points of its own resolution): ask again for those, up to a minute.
            pending = queries()
            answered: set[str] = set()

            def all_answered() -> bool:
                answered.update(mass_figure(e) for _, _, e in pending if prometheus.query(e))
                pending[:] = [(b, t, expr) for b, t, expr in pending if mass_figure(expr) not in answered]
                return not pending

            wait_until(
                all_answered,
                60,
                lambda: "panels without data:\n" + "\n".join(f"{b} / {t}: {e}" for b, t, e in pending),
                poll_s=2,
            )
            [up] = prometheus.query(f'up{{job="wattlog", host="{HOST}"}}')  # `up` carries the host too
            trained = prometheus.query(f'wattlog_train_loss_scale{{host="{HOST}", run="{RUN}"}}')
            assert up["value"][1] == "1" and trained  # choosing a host keeps the trainer's series
            co2 = prometheus.query(f'wattlog:run_co2_tonnes{{run="{RUN}"}}')
            assert co2[0]["metric"]["intensity_source"].startswith("constant: as published in the OLMo 2")
            stop.set()
            trainer.join(timeout=10)
    finally:
        stop.set()
        planner.close()
    assert len(queries()) >= 30  # the three dashboards hold 30-odd queries: none was skipped
