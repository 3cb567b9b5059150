"""Builders for the pieces of a Grafana dashboard (classic JSON model, schemaVersion 41).

Plain functions returning plain dicts, so the JSON written to disk is exactly what
the code says and a diff of the committed files reads like a diff of the code.
Only current panel types are used (timeseries, stat, state-timeline, table); no `graph`.
Units are Grafana's own scaling ones (`watth`, `joule`, `massg`, `litre`, `watt`), so a
short run reads "12 Wh" and "4.8 g" rather than "0.0002 MWh" and "0.000 t".
"""

from __future__ import annotations

from typing import Any

from wattlog.metric_names import MetricName

SCHEMA_VERSION = 41
DATASOURCE_UID = "wattlog-prometheus"
"""uid of the Prometheus data source, shared by provisioning YAML, the API provisioner and panels."""

DS = {"type": "prometheus", "uid": "${datasource}"}
"""Panels point at the dashboard's `datasource` variable, so one dashboard serves any Prometheus."""

SELECTOR = 'run=~"$run", host=~"$host", site=~"$site"'
"""Label filter every query carries: the three dashboard variables."""

Panel = dict[str, Any]


def target(expr: str, legend: str = "", ref: str = "A", *, instant: bool = False, fmt: str = "") -> dict:
    """One PromQL query of a panel.

    Args:
        expr: The PromQL expression.
        legend: Legend template, e.g. ``{{host}}``.
        ref: The query's refId (A, B, ...).
        instant: Query only the latest value (tables, stats).
        fmt: ``time_series`` (default), ``table`` or ``heatmap``.

    Returns:
        The target dict.
    """
    out: dict[str, Any] = {"datasource": DS, "expr": expr, "refId": ref, "range": not instant}
    if instant:
        out["instant"] = True
    if legend:
        out["legendFormat"] = legend
    if fmt:
        out["format"] = fmt
    return out


def _panel(kind: str, title: str, targets: list[dict], unit: str, description: str) -> Panel:
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DS,
        "targets": targets,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {},
    }


def timeseries(title: str, targets: list[dict], unit: str, description: str = "") -> Panel:
    """A time-series panel (the current replacement of the deprecated `graph`)."""
    panel = _panel("timeseries", title, targets, unit, description)
    panel["fieldConfig"]["defaults"]["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10}
    panel["options"] = {
        "legend": {"showLegend": True, "displayMode": "list", "placement": "bottom", "calcs": []},
        "tooltip": {"mode": "multi", "sort": "desc"},
    }
    return panel


def stat(title: str, targets: list[dict], unit: str, description: str = "", decimals: int = 2) -> Panel:
    """A single-value panel showing the latest value of each series (one per source label)."""
    panel = _panel("stat", title, targets, unit, description)
    panel["fieldConfig"]["defaults"]["decimals"] = decimals
    panel["options"] = {
        "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        "colorMode": "value",
        "graphMode": "area",
        "textMode": "value_and_name",
        "justifyMode": "auto",
        "orientation": "auto",
    }
    return panel


def state_timeline(title: str, targets: list[dict], unit: str, description: str = "") -> Panel:
    """One row per series (e.g. per GPU), coloured by its value over time: idle or lost GPUs stand out."""
    panel = _panel("state-timeline", title, targets, unit, description)
    panel["fieldConfig"]["defaults"]["color"] = {"mode": "continuous-BlYlRd"}
    panel["fieldConfig"]["defaults"]["custom"] = {"fillOpacity": 80, "lineWidth": 0}
    panel["options"] = {
        "showValue": "never",
        "mergeValues": False,
        "rowHeight": 0.9,
        "alignValue": "left",
        "legend": {"showLegend": True, "displayMode": "list", "placement": "bottom", "calcs": []},
        "tooltip": {"mode": "single", "sort": "none"},
    }
    return panel


def table(title: str, targets: list[dict], unit: str, description: str = "") -> Panel:
    """A table of an instant query, one row per series, labels as columns."""
    panel = _panel("table", title, targets, unit, description)
    panel["options"] = {"showHeader": True, "cellHeight": "sm"}
    panel["transformations"] = [{"id": "labelsToFields", "options": {}}]
    return panel


def row(title: str) -> Panel:
    """A collapsible row header."""
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def layout(panels: list[tuple[Panel, int, int]]) -> list[Panel]:
    """Give panels ids and grid positions, flowing left to right on Grafana's 24-column grid.

    Args:
        panels: (panel, width, height) in display order; rows take the full width.

    Returns:
        The panels with `id` and `gridPos` set.
    """
    out, x, y, line_h = [], 0, 0, 0
    for pid, (panel, w, h) in enumerate(panels, start=1):
        if panel["type"] == "row":
            y, x, line_h = y + line_h, 0, 0
            w, h = 24, 1
        elif x + w > 24:
            y, x, line_h = y + line_h, 0, 0
        out.append({"id": pid, **panel, "gridPos": {"x": x, "y": y, "w": w, "h": h}})
        x += w
        line_h = max(line_h, h)
        if panel["type"] == "row":
            y, x, line_h = y + 1, 0, 0
    return out


def datasource_variable() -> dict:
    """The `datasource` variable: any Prometheus, defaulting to wattlog's."""
    return {
        "type": "datasource",
        "name": "datasource",
        "label": "Prometheus",
        "query": "prometheus",
        "current": {"text": "Prometheus (wattlog)", "value": DATASOURCE_UID},
        "hide": 0,
        "refresh": 1,
        "regex": "",
        "options": [],
    }


def query_variable(name: str, label: str, query: str) -> dict:
    """A multi-select variable filled from `label_values(...)`, with All (regex `.*`) as default."""
    return {
        "type": "query",
        "name": name,
        "label": label,
        "datasource": DS,
        "definition": query,
        "query": {"query": query, "refId": f"{name}-values", "qryType": 1},
        "refresh": 2,
        "includeAll": True,
        "allValue": ".*",
        "multi": True,
        "current": {"text": ["All"], "value": ["$__all"]},
        "options": [],
        "regex": "",
        "sort": 1,
        "hide": 0,
    }


def dashboard(
    uid: str,
    title: str,
    panels: list[Panel],
    *,
    variables: list[dict],
    annotations: list[dict],
    description: str,
) -> dict:
    """The dashboard object (what /api/dashboards/db takes under `dashboard`).

    Args:
        uid: Stable uid (at most 40 characters), so provisioning updates rather than duplicates.
        title: Dashboard title.
        panels: Panels with ids and grid positions (see :func:`layout`).
        variables: Template variables.
        annotations: Annotation queries besides Grafana's built-in one.
        description: Shown in Grafana's dashboard settings.

    Returns:
        The dashboard JSON model.
    """
    builtin = {
        "builtIn": 1,
        "datasource": {"type": "grafana", "uid": "-- Grafana --"},
        "enable": True,
        "hide": True,
        "iconColor": "rgba(0, 211, 255, 1)",
        "name": "Annotations & Alerts",
        "type": "dashboard",
    }
    return {
        "id": None,
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["wattlog", "energy"],
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "links": [],
        "annotations": {"list": [builtin, *annotations]},
        "templating": {"list": variables},
        "panels": panels,
    }


def power_fluctuation_panels(selector: str) -> list[tuple[Panel, int, int]]:
    """A row showing how training power swings: GPU power as % of its limit, the job's swing and ramp.

    Checkpoint dips show as drops of the min/median lines; `wattlog table --power` gives
    the same figures from the ledger (dips counted, depth and duration).

    Args:
        selector: The label filter every query carries.

    Returns:
        (panel, width, height) entries for :func:`layout`.
    """
    gpu = f'{MetricName.POWER_WATTS}{{kind="gpu", {selector}}}'
    limit = f'{MetricName.POWER_LIMIT_WATTS}{{kind="gpu", {selector}}}'
    # one-to-one on every label (run, instance too): two agents on one host and device never collide
    pct = f"100 * {gpu} / {limit}"
    job = f"sum({gpu})"
    return [
        (row("Power fluctuation"), 24, 1),
        (
            timeseries(
                "GPU power, % of power limit",
                [
                    target(f"min({pct})", "min"),
                    target(f"quantile(0.5, {pct})", "median", "B"),
                    target(f"max({pct})", "max", "C"),
                ],
                "percent",
                "Each GPU's power as a share of its enforced limit; checkpoints show as dips of every line "
                "(H100s swing between about 15 % and 85 % of 700 W, Morrison et al., ICLR 2025).",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Job power swing (10 min)",
                [target(f"max_over_time({job}[10m:]) - min_over_time({job}[10m:])", "swing")],
                "watt",
                "Max - min of the selected GPUs' summed power over the last 10 minutes: what the grid sees.",
            ),
            6,
            8,
        ),
        (
            timeseries(
                "Job power ramp rate",
                [target(f"abs(deriv({job}[1m:]))", "ramp")],
                "si:W/s",  # SI-scaled by Grafana (kW/s on a large job), like every other unit
                "How fast the selected GPUs' summed power changes (W per second), from a 1-minute fit.",
            ),
            6,
            8,
        ),
    ]
