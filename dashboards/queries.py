"""What every wattlog board shares: layout, template variables, the events annotation, common PromQL."""

from __future__ import annotations

from wattlog.dashboards.panels import (
    DS,
    SELECTOR,
    Panel,
    dashboard,
    datasource_variable,
    layout,
    query_variable,
)
from wattlog.metric_names import MetricName

RUN_SITE = 'run=~"$run", site=~"$site"'
TOKENS_PER_JOULE = (
    f"sum by (run) (rate({MetricName.TRAIN_TOKENS_TOTAL}{{{SELECTOR}}}[5m])) / on (run) "
    f"sum by (run) (rate({MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}}[5m]))"
)


def board_variables() -> list[dict]:
    """The dashboard's variables: the data source, then run, host and site read from the energy series."""
    metric = MetricName.ENERGY_JOULES_TOTAL
    return [
        datasource_variable(),
        query_variable("run", "Run", f"label_values({metric}, run)"),
        query_variable("host", "Host", f'label_values({metric}{{run=~"$run"}}, host)'),
        query_variable("site", "Site", f'label_values({metric}{{run=~"$run"}}, site)'),
    ]


def events_annotation() -> dict:
    """wattlog's events (restarts, spikes, health checks) as annotations, from the trainer's counter."""
    return {
        "name": "wattlog events",
        "datasource": DS,
        "enable": True,
        "hide": False,
        "iconColor": "purple",
        "expr": f"increase({MetricName.TRAIN_EVENTS_TOTAL}{{{SELECTOR}}}[$__interval]) > 0",
        "step": "30s",
        "titleFormat": "{{kind}}",
        "textFormat": "{{run}} on {{host}}",
        "tagKeys": "kind,run",
        "useValueForTime": False,
    }


# `up` has no run label (the agent exports it, not the target): keep the targets whose agent reported a
# selected run, host and site in the last hour, by the agent's own labels (a target's host label that
# differs from the agent's cannot empty the panel). `and` matches any number of runs per target.
AGENTS_UP = (
    'max by (instance, host) (up{job="wattlog"}) and on (instance) '
    f"max by (instance) (last_over_time({MetricName.AGENT_FINISHED}{{{SELECTOR}}}[1h]))"
)


def board(uid: str, title: str, panels: list[tuple[Panel, int, int]], description: str) -> dict:
    """A wattlog board: `panels` laid out, with the shared variables and the events annotation."""
    return dashboard(
        uid,
        title,
        layout(panels),
        variables=board_variables(),
        annotations=[events_annotation()],
        description=description,
    )
