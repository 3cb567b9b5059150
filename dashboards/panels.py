"""Builders for the pieces of a Grafana dashboard (classic JSON model, schemaVersion 41).

Plain functions returning plain dicts, so the JSON written to disk is exactly what
the code says and a diff of the committed files reads like a diff of the code.
Only current panel types are used (timeseries, stat, state-timeline, table); no `graph`.
Units are Grafana's own scaling ones (`watth`, `litre`, `watt`), so a short run reads
"12 Wh" rather than "0.0002 MWh" and a large one "131 MWh" rather than "472 GJ". Mass is the
exception: Grafana's `massg`/`masskg` scale on to "Mg", a unit no reader expects, so a figure
in tonnes comes as two queries (:func:`tonnes`): kg (read "11.4 g" or "520 kg") below a tonne,
t ("52 t") from there.
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

KG, T = "masskg", "masst"
"""Grafana's kilogram (scales down to g) and tonne units: see :func:`tonnes`."""
TOK_PER_J = "suffix: tok/J"
TOK_PER_S = "si:tok/s"  # SI-scaled by Grafana (ktok/s on a large job), like "si:W/s"
KG_PER_KWH = "suffix: kg/kWh"
KG_FIXED = "suffix: kg"
"""Kilograms without scaling: a time-series panel's series share one axis, so they cannot split at 1 t."""
REPORT_URL = "${report}/?run=${__field.labels.run}"
"""A series' run in the carbon report (`wattlog report` serves ?run=NAME at the `report` variable's URL)."""


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


def tonnes(expr: str, legend: str, refs: str) -> list[dict]:
    """An instant figure in tonnes as two queries: kg below 1 t (ref refs[0]), t from 1 t (ref refs[1]).

    Give the panel :func:`unit_by_ref` with ``{refs[0]: KG, refs[1]: T}``: 11.4 g, 520 kg, 52 t.
    """
    low, high = refs[0], refs[1]
    return [
        target(f"({expr}) * 1000 and abs({expr}) < 1", legend, low, instant=True),
        target(f"({expr}) and abs({expr}) >= 1", legend, high, instant=True),
    ]


def unit_by_ref(panel: Panel, units: dict[str, str]) -> Panel:
    """`panel` with the unit of each query's series set by its refId (an override per query)."""
    for ref, unit in units.items():
        panel["fieldConfig"]["overrides"].append(
            {"matcher": {"id": "byFrameRefID", "options": ref}, "properties": [{"id": "unit", "value": unit}]}
        )
    return panel


def no_value(panel: Panel, text: str) -> Panel:
    """`panel` saying `text` when its queries return nothing (rather than Grafana's "No data")."""
    panel["fieldConfig"]["defaults"]["noValue"] = text
    return panel


def report_link(panel: Panel) -> Panel:
    """`panel` with a data link from each series to its run's carbon report."""
    panel["fieldConfig"]["defaults"]["links"] = [
        {"title": "Carbon report of run ${__field.labels.run}", "url": REPORT_URL, "targetBlank": True}
    ]
    return panel


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
    """A table of an instant query, one row per series, labels as columns (scrape labels hidden)."""
    panel = _panel("table", title, targets, unit, description)
    panel["options"] = {"showHeader": True, "cellHeight": "sm"}
    hidden = {name: True for name in ("Time", "__name__", "job", "instance")}
    panel["transformations"] = [
        {"id": "labelsToFields", "options": {}},
        {"id": "organize", "options": {"excludeByName": hidden}},
    ]
    return panel


def states(panel: Panel, names: dict[int, tuple[str, str]]) -> Panel:
    """`panel` showing each value as a named state: {value: (text, colour)}."""
    options = {
        str(v): {"text": text, "color": color, "index": i}
        for i, (v, (text, color)) in enumerate(names.items())
    }
    panel["fieldConfig"]["defaults"]["mappings"] = [{"type": "value", "options": options}]
    panel["fieldConfig"]["defaults"]["color"] = {"mode": "thresholds"}
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
    links: list[dict],
) -> dict:
    """The dashboard object (what /api/dashboards/db takes under `dashboard`).

    Args:
        uid: Stable uid (at most 40 characters), so provisioning updates rather than duplicates.
        title: Dashboard title.
        panels: Panels with ids and grid positions (see :func:`layout`).
        variables: Template variables.
        annotations: Annotation queries besides Grafana's built-in one.
        description: Shown in Grafana's dashboard settings.
        links: Links shown at the top (to other boards, the report).

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
        "timezone": "utc",  # wattlog says UTC everywhere (the CLI, the report, the ledger)
        "editable": True,
        "graphTooltip": 1,
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "links": links,
        "annotations": {"list": [builtin, *annotations]},
        "templating": {"list": variables},
        "panels": panels,
    }


def _limit_pct(pct: str, ledger: str) -> Panel:
    """Min, median and max of the GPUs' power as % of their limit."""
    return timeseries(
        "GPU power, % of power limit (per scrape)",
        [
            target(f"min({pct})", "min"),
            target(f"quantile(0.5, {pct})", "median", "B"),
            target(f"max({pct})", "max", "C"),
        ],
        "percent",
        "Each GPU's latest power reading at each scrape as a share of its enforced limit; checkpoints "
        "show as dips of every line (H100s swing between about 15 % and 85 % of 700 W, Morrison et al., "
        f"ICLR 2025). {ledger}",
    )


def power_fluctuation_panels(selector: str) -> list[tuple[Panel, int, int]]:
    """A row showing how training power swings: GPU power as % of its limit, the job's swing and ramp.

    Checkpoint dips show as drops of the min/median lines. `wattlog table --power` and the report
    compute the same names from the ledger's rows, one mean power per flush interval (their
    Resolution column); these panels read each scrape's latest reading (the swing on explicit 5 s steps). Each
    title names its resolution, since a dip shorter than a step is missed by one and not the other.

    Args:
        selector: The label filter every query carries.

    Returns:
        (panel, width, height) entries for :func:`layout`.
    """
    gpu = f'{MetricName.POWER_WATTS}{{kind="gpu", {selector}}}'
    limit = f'{MetricName.POWER_LIMIT_WATTS}{{kind="gpu", {selector}}}'
    # one-to-one on every label (run, instance too): two agents on one host and device never collide
    pct = f"100 * {gpu} / {limit}"
    job = f"sum by (run) ({gpu})"  # per run: a sum over every selected run swung as runs started and ended
    ledger = "`wattlog table --power` gives the ledger's figure at its flush interval (Resolution column)."
    return [
        (row("Power fluctuation"), 24, 1),
        (_limit_pct(pct, ledger), 12, 8),
        (
            timeseries(
                "Job power swing (10 min window, 5 s steps)",
                [target(f"max_over_time({job}[10m:5s]) - min_over_time({job}[10m:5s])", "{{run}} swing")],
                "watt",
                "Max - min of each selected run's summed GPU power over the last 10 minutes: what the "
                f"grid sees of it. {ledger}",
            ),
            6,
            8,
        ),
        (
            timeseries(
                "Job power ramp rate (1 min fit, per scrape)",
                # the sum of each GPU's fitted slope is the slope of their sum: no subquery steps to pick
                [target(f"abs(sum by (run) (deriv({gpu}[1m])))", "{{run}} ramp")],
                "si:W/s",  # SI-scaled by Grafana (kW/s on a large job), like every other unit
                "How fast each selected run's summed GPU power changes (W per second), from a "
                "least-squares fit over 1 minute; the ledger's ramp is the steepest step between "
                f"neighbouring rows. {ledger}",
            ),
            6,
            8,
        ),
    ]
