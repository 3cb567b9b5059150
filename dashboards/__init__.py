"""Where users look at what wattlog measured: Grafana, alerts, webhooks and the carbon report.

- build: dashboards as code -> grafana/*.json and prometheus/sites.rules.yml
  (`python -m wattlog.dashboards.build`).
- energy_board, devices_board, training_board: the three boards, one module each.
- queries: what every board shares (variables, the events annotation, common PromQL, board()).
- panels: builders of the Grafana dashboard model (schemaVersion 41, current panel types).
- siterules: the site catalog as Prometheus recording rules.
- provision: Grafana HTTP API provisioning (data source, folder, dashboards), idempotent.
- webhooks: the Alertmanager/Grafana webhook receiver that records alerts in the ledger.
- notify: sending wattlog's own events to a JSON or Slack-compatible webhook.
- report: the Streamlit carbon report (report/data.py reads, report/app.py draws).
- cli: `wattlog dashboards build|provision`, `wattlog webhook serve|send`, `wattlog report`.
- prometheus/: rules.yml (+ promtool tests), sites.rules.yml, alertmanager.yml, prometheus.yml.

The names below are imported on first use (wattlog.lazy): importing a light module such as
panels or siterules loads no SQLAlchemy, grafana-client, streamlit or pandas.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from wattlog.lazy import lazy_package

if TYPE_CHECKING:
    from wattlog.dashboards.devices_board import devices_dashboard
    from wattlog.dashboards.energy_board import energy_dashboard
    from wattlog.dashboards.notify import Notifier, detection_hook, events_to_send
    from wattlog.dashboards.provision import ProvisionConfig, Provisioner, connect
    from wattlog.dashboards.report.data import RunReport, load_report
    from wattlog.dashboards.siterules import site_rules
    from wattlog.dashboards.training_board import training_dashboard
    from wattlog.dashboards.webhooks import AlertRecorder, Auth, WebhookReceiver

logging.getLogger(__name__).addHandler(logging.NullHandler())

_HOMES = {
    "AlertRecorder": "wattlog.dashboards.webhooks",
    "Auth": "wattlog.dashboards.webhooks",
    "Notifier": "wattlog.dashboards.notify",
    "ProvisionConfig": "wattlog.dashboards.provision",
    "Provisioner": "wattlog.dashboards.provision",
    "RunReport": "wattlog.dashboards.report.data",
    "WebhookReceiver": "wattlog.dashboards.webhooks",
    "connect": "wattlog.dashboards.provision",
    "detection_hook": "wattlog.dashboards.notify",
    "devices_dashboard": "wattlog.dashboards.devices_board",
    "energy_dashboard": "wattlog.dashboards.energy_board",
    "events_to_send": "wattlog.dashboards.notify",
    "load_report": "wattlog.dashboards.report.data",
    "site_rules": "wattlog.dashboards.siterules",
    "training_dashboard": "wattlog.dashboards.training_board",
}

__all__ = [
    "AlertRecorder",
    "Auth",
    "Notifier",
    "ProvisionConfig",
    "Provisioner",
    "RunReport",
    "WebhookReceiver",
    "connect",
    "detection_hook",
    "devices_dashboard",
    "energy_dashboard",
    "events_to_send",
    "load_report",
    "site_rules",
    "training_dashboard",
]

lazy_package(__name__, _HOMES)
