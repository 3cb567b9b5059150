"""What every wattlog board shares: variables, links, annotations, and PromQL that reads right at any moment.

Three kinds of figures, three ways to ask (tests/integration/test_panels_vs_ledger.py runs each
during a run and five minutes after it and compares it with the ledger):

- "now" figures (:func:`live`) keep only agents that are up and not finished: when every run has
  ended a "now" panel says so instead of showing the last value of its range;
- totals (:func:`so_far`) take each series' last value in the dashboard's range, so a finished
  run's energy still counts (its series went stale when its agent ended);
- histories (time series) draw what was measured, each series named by run and host.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from wattlog.dashboards.panels import (
    DS,
    SELECTOR,
    Panel,
    dashboard,
    datasource_variable,
    layout,
    query_variable,
    state_timeline,
    states,
    target,
)
from wattlog.metric_names import MetricName

RUN_SITE = 'run=~"$run", site=~"$site"'
TOKENS_PER_JOULE = (
    f"sum by (run) (rate({MetricName.TRAIN_TOKENS_TOTAL}{{{SELECTOR}}}[5m])) / on (run) "
    f"sum by (run) (rate({MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}}[5m]))"
)
FINISHED = f"{MetricName.AGENT_FINISHED}{{{SELECTOR}}}"
NONE_LIVE = "no live agent: every selected run has ended"


def live(selector: str) -> str:
    """`selector`'s series of agents still measuring: scraped now and not yet finished.

    A finished agent serves its last scrape with its finished mark at 1, then its series go
    stale: either way a "now" panel drops it at once instead of holding its last value.
    """
    return f"({selector} and on (instance, run) ({FINISHED} == 0))"


def so_far(selector: str) -> str:
    """Each series' last value in the dashboard's range: a total that counts finished runs too."""
    return f"last_over_time({selector}[$__range])"


# Per agent: 1 up (measuring), 2 finished (ended normally: its last scrape read the finished mark at 1),
# 0 lost (down without that mark: a crash, a kill, a lost node). `up` has no run label (the target exports
# it, not the agent): it is joined on the job and instance the mark was scraped under, so any scrape
# job's name works (a literal list read every agent of another job "lost"). Without an `up` series (a
# target since removed from the scrape config) the finished mark alone decides.
_FINISHED_MARK = f"max by (job, instance, host, run) ({so_far(FINISHED)})"
_UP = "max by (job, instance) (up)"
_ON = "on (job, instance) group_left ()"
AGENT_STATE = f"(2 * {_FINISHED_MARK} * {_ON} (1 - {_UP}) + {_ON} {_UP}) or 2 * {_FINISHED_MARK}"
AGENT_STATES = {1: ("up", "green"), 2: ("finished", "blue"), 0: ("lost", "red")}


def agents_panel() -> Panel:
    """Each agent's state over time: up, finished (ended normally) or lost (down without the mark)."""
    panel = state_timeline(
        "Agents up",
        [target(AGENT_STATE, "{{run}} {{host}} {{instance}}")],
        "none",
        f"Per agent: up (scraped), finished (its last scrape read {MetricName.AGENT_FINISHED} 1: a normal "
        "end) or lost (down without that mark: a crash, a kill, a lost node; WattlogAgentDown fires).",
    )
    return states(panel, AGENT_STATES)


def board_variables() -> list[dict]:
    """The board's variables: the data source, run, host and site from the energy series, the report URL."""
    metric = MetricName.ENERGY_JOULES_TOTAL
    return [
        datasource_variable(),
        query_variable("job", "Job", f"label_values({MetricName.AGENT_FINISHED}, job)"),
        query_variable("run", "Run", f"label_values({metric}, run)"),
        query_variable("host", "Host", f'label_values({metric}{{run=~"$run"}}, host)'),
        query_variable("site", "Site", f'label_values({metric}{{run=~"$run"}}, site)'),
        report_variable(),
    ]


def _annotation(name: str, color: str, expr: str, title: str, text: str, tags: str) -> dict:
    return {
        "name": name,
        "datasource": DS,
        "enable": True,
        "hide": False,
        "iconColor": color,
        "expr": expr,
        "step": "30s",
        "titleFormat": title,
        "textFormat": text,
        "tagKeys": tags,
        "useValueForTime": False,
    }


def _events(kinds: str) -> str:
    return f'increase({MetricName.TRAIN_EVENTS_TOTAL}{{kind=~"{kinds}", {SELECTOR}}}[$__interval]) > 0'


def board_annotations() -> list[dict]:
    """Checkpoints, restarts, other training events and alerts (a region from firing to resolved)."""
    others = f'increase({MetricName.TRAIN_EVENTS_TOTAL}{{kind!~"checkpoint|restart|progress", {SELECTOR}}}'
    return [
        _annotation(
            "checkpoints", "blue", _events("checkpoint"), "checkpoint", "{{run}} on {{host}}", "kind,run"
        ),
        _annotation("restarts", "orange", _events("restart"), "restart", "{{run}} on {{host}}", "kind,run"),
        _annotation(
            "wattlog events",
            "purple",
            f"{others}[$__interval]) > 0",
            "{{kind}}",
            "{{run}} on {{host}}",
            "kind,run",
        ),
        # Grafana draws consecutive points of one series as a region: it starts when the alert fired and
        # ends when it resolved. Alerts without a run label (a host's, the scrape's) show under any run.
        _annotation(
            "alerts",
            "red",
            'ALERTS{alertstate="firing", run=~"$run|"}',
            "{{alertname}} ({{severity}})",
            "firing from the region's start, resolved at its end; run {{run}} host {{host}}",
            "alertname,severity,run",
        ),
    ]


REPORT_DEFAULT = "http://localhost:8501"
"""Where `wattlog report` serves by default (its --port 8501)."""


def report_variable() -> dict:
    """The `report` variable: base URL of the carbon report, which links go to (editable on the board)."""
    return {
        "type": "textbox",
        "name": "report",
        "label": "Carbon report",
        "query": REPORT_DEFAULT,
        "current": {"text": REPORT_DEFAULT, "value": REPORT_DEFAULT},
        "hide": 0,
        "options": [],
    }


def _link(kind: str, title: str, tooltip: str, **extra: Any) -> dict:
    base = {"type": kind, "title": title, "tooltip": tooltip, "icon": "external link", "url": "", "tags": []}
    return base | {"asDropdown": False, "targetBlank": False, "includeVars": False, "keepTime": False} | extra


DASHBOARD_LINKS = [
    _link("dashboards", "wattlog", "The other wattlog boards", tags=["wattlog"], includeVars=True,
          keepTime=True),
    _link("link", "Carbon report", "The ledger's figures of a run (pick it there, or follow a series' link)",
          url="${report}", targetBlank=True, icon="doc"),
]  # fmt: skip
"""Each board links to the others (keeping run, host, site and time) and to the carbon report."""


def grafana_url(base: str, run: str, uid: str = "wattlog-energy") -> str:
    """A board showing `run` (for links back from the report): e.g. http://localhost:3000/d/wattlog-energy?var-run=r1."""
    return f"{base.rstrip('/')}/d/{uid}?var-run={quote(run)}"


def board(uid: str, title: str, panels: list[tuple[Panel, int, int]], description: str) -> dict:
    """A wattlog board: `panels` laid out, with the shared variables, annotations and links."""
    return dashboard(
        uid,
        title,
        layout(panels),
        variables=board_variables(),
        annotations=board_annotations(),
        description=description,
        links=DASHBOARD_LINKS,
    )
