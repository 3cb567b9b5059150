"""Where users look at what wattlog measured: Grafana, alerts, webhooks and the carbon report.

- build: dashboards as code -> grafana/*.json and prometheus/sites.rules.yml
  (`python -m wattlog.dashboards.build`).
- panels: builders of the Grafana dashboard model (schemaVersion 41, current panel types).
- siterules: the site catalog as Prometheus recording rules.
- provision: Grafana HTTP API provisioning (data source, folder, dashboards), idempotent.
- webhooks: the Alertmanager/Grafana webhook receiver that records alerts in the ledger.
- notify: sending wattlog's own events to a JSON or Slack-compatible webhook.
- report: the Streamlit carbon report (report/data.py reads, report/app.py draws).
- cli: `wattlog dashboards build|provision`, `wattlog webhook serve|send`, `wattlog report`.
- prometheus/: rules.yml (+ promtool tests), sites.rules.yml, alertmanager.yml, prometheus.yml.

Nothing heavy is imported here: grafana-client, streamlit and pandas load with the module that needs them.
"""

from __future__ import annotations

import logging

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__: list[str] = []
