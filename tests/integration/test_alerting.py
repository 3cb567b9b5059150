"""Real Prometheus -> real Alertmanager -> `wattlog webhook serve` -> an event in the ledger (127.0.0.1).

The trainer's exporter reports a collapsed loss scale for run itest-run (and for a
run the ledger doesn't know); Prometheus evaluates wattlog's own rules.yml (with
every `for:` cut to 1 s), Alertmanager sends with wattlog's alertmanager.yml
(timings cut, URL and token file pointed at the test's receiver). Expected: one
alert event for itest-run, none for the unknown run (refused with 422), no duplicate.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from tests.integration.conftest import Servers
from tests.integration.servers import free_port, wattlog_process
from tests.waiting import wait_until
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.dashboards import build
from wattlog.errors import LedgerError
from wattlog.telemetry.exporter import MetricsServer, serve
from wattlog.trainer.exporter import TrainingCollector, TrainingState
from wattlog.trainer.metrics import StepRecord

pytestmark = pytest.mark.integration

PROMETHEUS_DIR = Path(build.__file__).parent / "prometheus"
RUN, GHOST = "itest-run", "ghost-run"
TOKEN = "itest-webhook-token"


def test_rules(tmp_path: Path) -> Path:
    """wattlog's rules.yml with every `for:` cut to 1 s (Prometheus evaluates every second)."""
    rules = yaml.safe_load((PROMETHEUS_DIR / "rules.yml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "1s"
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    return path


test_rules.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def alertmanager_config(tmp_path: Path, webhook_url: str) -> str:
    """wattlog's alertmanager.yml with short timings, the test receiver's URL and token file."""
    config = yaml.safe_load((PROMETHEUS_DIR / "alertmanager.yml").read_text())
    config["route"].update(group_wait="1s", group_interval="1s", repeat_interval="1h")
    [receiver] = [r for r in config["receivers"] if "webhook_configs" in r]  # `none` sends nothing
    hook = receiver["webhook_configs"][0]
    token_file = tmp_path / "webhook-token"
    token_file.write_text(TOKEN)
    hook["url"] = webhook_url
    hook["http_config"]["authorization"]["credentials_file"] = str(token_file)
    return yaml.safe_dump(config)


def collapsed_trainer(run: str) -> MetricsServer:
    """A trainer exporter whose loss scale fell to 2^-7."""
    state = TrainingState()
    state.observe(
        [StepRecord(step=100, wall_s=time.time(), values={"loss_scale": 2.0**-7, "tokens": 4096.0})]
    )
    registry = CollectorRegistry()
    registry.register(TrainingCollector(state, run=run))
    return serve(registry, port=0)


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    Ledger(make_engine(url)).start_run(RUN, RunSpec(site="jupiter"))
    return url


@pytest.fixture
def receiver(ledger_url: str, tmp_path: Path) -> Iterator[str]:
    """`wattlog webhook serve` as its own process; yields its /alerts URL."""
    port = free_port()
    with wattlog_process(
        ["webhook", "serve", "--port", str(port), "--db", ledger_url],
        tmp_path / "webhook.log",
        f"http://127.0.0.1:{port}/health",
        env={"WATTLOG_WEBHOOK_TOKEN": TOKEN},
    ):
        yield f"http://127.0.0.1:{port}/alerts"


def test_an_alert_in_a_scraped_exporter_reaches_the_ledger(
    servers: Servers, receiver: str, ledger_url: str, tmp_path: Path
) -> None:
    trainers = [collapsed_trainer(RUN), collapsed_trainer(GHOST)]
    try:
        alertmanager = servers.alertmanager(alertmanager_config(tmp_path, receiver))
        jobs = [
            {"job_name": f"trainer-{i}", "static_configs": [{"targets": [f"127.0.0.1:{t.port}"]}]}
            for i, t in enumerate(trainers)
        ]
        prometheus = servers.prometheus(
            rule_files=[test_rules(tmp_path)],
            alertmanager_url=alertmanager.url,
            extra_scrape_configs=jobs,
            evaluation_interval_s=1.0,
        )
        ledger = Ledger(make_engine(ledger_url))
        started = time.monotonic()  # Prometheus -> Alertmanager -> webhook took ~7.6 s here: 45 s for both
        wait_until(
            lambda: [e for e in ledger.events(RUN) if e.kind == "alert"],
            45,
            lambda: (
                f"no alert event; Prometheus alerts: {prometheus.query('ALERTS')}\n"
                f"receiver log: {(tmp_path / 'webhook.log').read_text()}\n{alertmanager.log()}"
            ),
            poll_s=0.5,
        )
        refusal = f"unknown run '{GHOST}'"
        wait_until(  # the ghost run's group, refused
            lambda: refusal in (tmp_path / "webhook.log").read_text(),
            max(0.0, 45 - (time.monotonic() - started)),
            lambda: f"no refusal of {GHOST}; receiver log: {(tmp_path / 'webhook.log').read_text()}",
            poll_s=0.5,
        )
        time.sleep(2)  # room for a duplicate delivery to show up, if there were one (waits for a non-event)
        # Read while the exporters still serve: once closed, the alert resolves and its (rightly
        # recorded) resolved notification could race this read.
        alerts = [e for e in ledger.events(RUN) if e.kind == "alert"]
    finally:
        for trainer in trainers:
            trainer.close()
    assert len(alerts) == 1, [e.payload for e in alerts]
    [event] = alerts
    assert event.category == "alert"
    assert event.payload["alertname"] == "WattlogLossScaleCollapse"
    assert event.payload["status"] == "firing" and event.payload["labels"]["run"] == RUN
    assert event.payload["receiver"] == "wattlog-ledger"
    assert "collapsed" in event.payload["annotations"]["summary"]
    assert abs(event.time_s - time.time()) < 120
    assert "webhook refused (422)" in (tmp_path / "webhook.log").read_text()
    with pytest.raises(LedgerError, match="does not exist"):
        ledger.events(GHOST)  # nothing created for it either
