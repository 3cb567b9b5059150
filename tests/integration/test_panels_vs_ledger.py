"""Every panel query on a real Prometheus during a run and 5 minutes after it ends, against the ledger.

Two Trackers over simulated GPUs write one ledger and are scraped at the shipped intervals (every 5 s,
rules evaluated every 15 s: prometheus.yml) with the shipped rules: run "done" finishes first, run
"live" goes on, a third agent "crashes" (stops without its finished mark). While "live" runs, "now"
panels must show it alone, totals must add "done" (the ledger's figures, to the joule) and the agents
panel must tell finished from up and lost. Once "live" has ended (just after a rule evaluation, so rules
evaluated every 15 s never see its last scrape: a board reading them under-read a short run's CO2 by 7
%), every query is evaluated again at its end + 300 s (Prometheus evaluates an instant query at any
time, so nobody waits 5 minutes): "now" panels are empty (the board says "no live agent"), totals equal
the ledger's energy, CO2, water, tokens per joule, per device, and history panels and annotations have
data over the run's range. Every panel of the three boards is in exactly one of those groups, so a new
panel must say how it is checked."""

from __future__ import annotations

import re
import threading
import time
import urllib.parse
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge

from tests.integration.conftest import Servers
from tests.integration.servers import Prometheus, http_json
from tests.waiting import wait_until
from wattlog.accounting.carbon.sites import builtin_sites
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.jobs import rank_progress
from wattlog.accounting.publishing.run_table import TableOptions, run_footprint
from wattlog.dashboards import build
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.exporter import AgentStateCollector, serve
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.tracker import Tracker

pytestmark = pytest.mark.integration

SITE, PLANNED, BUDGET_T = "jupiter", 1e7, 1e-5
SCRAPE_S, EVALUATION_S = 5.0, 15.0  # as dashboards/prometheus/prometheus.yml
PROMETHEUS_DIR = Path(build.__file__).parent / "prometheus"
# $__interval: only the annotations use it, and Grafana sets it to their step (30 s)
VARIABLES = {"$run": ".*", "$host": ".*", "$site": ".*", "$__interval": "30s", "$__range": "1h"}
NOW = {"Cluster power"}
TOTALS = {
    "Energy so far", "CO2 so far and projected", "Water so far and projected", "Tokens per joule",
    "Energy by device and source", "CO2 budget: spent, projected, remaining", "Lost devices",
    "Carbon intensity and its source", "Agents up",
}  # fmt: skip
ALERT_RULE = """groups:
  - name: panel-test
    rules:
      - alert: PanelTestLiveRunTrains
        expr: wattlog_train_loss{run="live"} > 0
        labels: {severity: info}
"""


def panels() -> dict[str, list[str]]:
    """Title -> PromQL of every panel and annotation of the three boards, variables at All."""
    out: dict[str, list[str]] = {}
    for make in build.BOARDS.values():
        board = make()
        items = [(p["title"], t["expr"]) for p in board["panels"] for t in p.get("targets", [])]
        items += [(f"annotation {a['name']}", a["expr"]) for a in board["annotations"]["list"] if "expr" in a]
        for title, expr in items:
            for variable, value in VARIABLES.items():
                expr = expr.replace(variable, value)
            out.setdefault(title, []).append(expr)
    return out


def values(prometheus: Prometheus, expr: str, at_s: float) -> dict[tuple[str, ...], float]:
    """{(run, source or device...): value} of an instant query at `at_s`."""
    return {
        tuple(r["metric"].get(k, "") for k in ("run", "source", "host", "device", "intensity_source")): float(
            r["value"][1]
        )
        for r in prometheus.query(expr, at_s=at_s)
    }


def series_over(prometheus: Prometheus, expr: str, start_s: float, end_s: float) -> list[dict[str, Any]]:
    """The range query Grafana runs for a time-series panel, 1 s steps."""
    params = urllib.parse.urlencode({"query": expr, "start": start_s, "end": end_s, "step": "1"})
    return list(http_json(f"{prometheus.url}/api/v1/query_range?{params}")["data"]["result"])


def train(tracker: Tracker, stop: threading.Event, nan: threading.Event) -> None:
    steps, sent = 0, False
    while not stop.is_set():
        # one non-finite loss once asked (after the first scrapes): a training-event annotation
        loss, sent = (float("nan"), True) if nan.is_set() and not sent else (2.5, sent)
        tracker.step(loss=loss, tokens=512, grad_norm=1.0, loss_scale=65536.0)
        steps += 1
        if steps % 40 == 0:
            tracker.checkpoint()
        time.sleep(0.02)


class Run:
    """A Tracker training in a thread on its own agent (own host, locks), into the shared ledger."""

    def __init__(self, name: str, db: str, tmp_path: Path, peak_flops: float) -> None:
        agent = AgentConfig(port=0, flush_s=1.0, host=f"node-{name}", lock_dir=tmp_path / name, linger_s=15.0)
        sensors = [SimulatedSensor(simulated_gpus(2, t0_s=time.monotonic(), seed=len(name)))]
        self.tracker = Tracker(name, site=SITE, db=db, log_every=5, gc_every=None, sensors=sensors,
                               agent_config=agent, environ={}, flops_per_token=6e6,
                               peak_flops=peak_flops)  # fmt: skip
        self.stop, self.nan = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=train, args=(self.tracker, self.stop, self.nan), daemon=True)
        self.running = False

    def start(self) -> str:
        self.tracker.__enter__()
        self.running = True
        self.thread.start()
        assert self.tracker.agent is not None and self.tracker.agent.metrics_url is not None
        return "127.0.0.1:" + self.tracker.agent.metrics_url.split(":")[-1].split("/")[0]

    def end(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)
        if self.running:
            self.running = False
            self.tracker.__exit__(None, None, None)  # serves until a scrape has read the finished mark


def ledger_figures(db: str, run: str) -> dict[str, Any]:
    """What the ledger says of `run`: J, J per device, t CO2, kL water, tokens, band (J)."""
    ledger = Ledger(make_engine(db))
    info = ledger.get_run(run)
    footprint = run_footprint(ledger, info, TableOptions(catalog=builtin_sites()))
    assert footprint is not None
    totals = ledger.energy_totals(run)
    return {
        "joules": sum(t.energy_j for t in totals),
        "devices": {(t.host, t.device): t.energy_j for t in totals},
        "co2_t": float(footprint.co2_t),
        "water_kl": float(footprint.water_kl),
        "tokens": sum(r.tokens_total for r in rank_progress(ledger, run)),
        "band_j": (footprint.energy_band_j.lo, footprint.energy_band_j.hi),
    }


def shipped_intervals() -> tuple[float, float]:
    """The scrape and evaluation intervals of the shipped prometheus.yml, seconds (5 and 15)."""
    text = (PROMETHEUS_DIR / "prometheus.yml").read_text()
    found = dict(re.findall(r"^\s+(scrape_interval|evaluation_interval): (\d+)s$", text, re.MULTILINE))
    return float(found["scrape_interval"]), float(found["evaluation_interval"])


def start_prometheus(servers: Servers, tmp_path: Path, targets: list[str], planner_port: int) -> Prometheus:
    """The shipped rules and intervals (site constants every 15 s: they only wait for their first
    evaluation), a test alert, the runs' plans."""
    sites = tmp_path / "sites.rules.yml"
    shipped = (PROMETHEUS_DIR / "sites.rules.yml").read_text()
    sites.write_text(shipped.replace("interval: 1m", "interval: 15s"))
    (tmp_path / "alert.rules.yml").write_text(ALERT_RULE)
    jobs = [
        {  # as dashboards/prometheus/prometheus.yml: the agents' own run and host labels kept
            "job_name": "wattlog",
            "honor_labels": True,
            "static_configs": [{"targets": targets, "labels": {"site": SITE}}],
        },
        {"job_name": "plans", "static_configs": [{"targets": [f"127.0.0.1:{planner_port}"]}]},
    ]
    rules = [PROMETHEUS_DIR / "rules.yml", sites, tmp_path / "alert.rules.yml"]
    return servers.prometheus(
        rule_files=rules,
        extra_scrape_configs=jobs,
        scrape_interval_s=SCRAPE_S,
        evaluation_interval_s=EVALUATION_S,
    )


def rules_evaluated(prometheus: Prometheus, group: str, after_s: float) -> bool:
    """Whether rule group `group` was evaluated after `after_s` (its own clock, from /api/v1/rules)."""
    groups = http_json(f"{prometheus.url}/api/v1/rules")["data"]["groups"]
    [found] = [g for g in groups if g["name"] == group]
    stamp = found["lastEvaluation"].replace("Z", "+00:00")
    seconds, _, rest = stamp.partition(".")  # RFC 3339 with nanoseconds: fromisoformat takes micro
    zone = rest[rest.index("+") :] if "+" in rest else "+00:00"
    return datetime.fromisoformat(seconds + zone).timestamp() > after_s


def end_after_an_evaluation(prometheus: Prometheus, run: Run) -> None:
    """End `run` just after the footprint rules were evaluated: its last scrape (within a scrape of its
    end) and its series going stale (a scrape later) both fall before their next evaluation."""
    asked_s = time.time()
    wait_until(
        lambda: rules_evaluated(prometheus, "wattlog-footprint", asked_s),
        EVALUATION_S + 5,
        "the footprint rules were not evaluated",
        poll_s=0.2,
    )
    run.end()


def plans() -> CollectorRegistry:
    """Each run's planned tokens and CO2 budget, as a user would publish them (rules.yml)."""
    plan = CollectorRegistry()
    planned = Gauge("wattlog_run_planned_tokens", "Planned tokens.", ["run"], registry=plan)
    budget = Gauge("wattlog_run_co2_budget_tonnes", "CO2 budget.", ["run"], registry=plan)
    for run in ("done", "live"):
        planned.labels(run).set(PLANNED)
        budget.labels(run).set(BUDGET_T)
    return plan


def by_run(found: dict[tuple[str, ...], float]) -> dict[str, float]:
    """{run: value} of a per-run query's answer."""
    return {key[0]: value for key, value in found.items()}


def tonnes_of(prometheus: Prometheus, exprs: list[str], at_s: float) -> dict[str, float]:
    """{run: tonnes} from a mass figure's kg and t queries (panels.tonnes)."""
    kg, t = (by_run(values(prometheus, e, at_s)) for e in exprs)
    assert not kg.keys() & t.keys()  # each run in one unit only
    return {run: v / 1000 for run, v in kg.items()} | t


def test_every_panel_reads_right_during_a_run_and_five_minutes_after_it(
    servers: Servers, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    # "done" is given a peak 100 times too low: its MFU of some 1,000 % must not be drawn
    done, live = Run("done", db, tmp_path, peak_flops=1e10), Run("live", db, tmp_path, peak_flops=1e12)
    crashing = CollectorRegistry()
    crashing.register(AgentStateCollector("node-crashed", "crashed"))
    crashed, planner = serve(crashing, port=0), serve(plans(), port=0)
    servers_open = [crashed, planner]
    try:
        targets = [done.start(), live.start(), f"127.0.0.1:{crashed.port}"]
        prometheus = start_prometheus(servers, tmp_path, targets, planner.port)
        start_s = time.time()
        prometheus.wait_for(
            "count_over_time(wattlog_agent_finished[1m]) >= 3 and on () count(wattlog:site_pue)",
            lambda r: len(r) == 3,
            timeout_s=4 * EVALUATION_S,
        )
        # the test alert has fired on the live run before its loss turns NaN and resolves it (at a 15 s
        # evaluation a loaded machine's first evaluation can come after a fixed stretch ends)
        firing = 'ALERTS{alertname="PanelTestLiveRunTrains", alertstate="firing"}'
        prometheus.wait_for(firing, bool, timeout_s=4 * EVALUATION_S)
        live.nan.set()
        servers_open.remove(crashed)
        crashed.close()  # no finished mark: a crash
        done.end()
        prometheus.wait_for('up{job="wattlog"} == 0', lambda r: len(r) == 2, timeout_s=3 * SCRAPE_S)
        time.sleep(1.0)  # then ask half a second back: every scrape up to that moment is stored
        live_j = check_during(prometheus, ledger_figures(db, "done"), time.time() - 0.5)
        end_after_an_evaluation(prometheus, live)
        prometheus.wait_for('up{job="wattlog"} == 0', lambda r: len(r) == 3, timeout_s=3 * SCRAPE_S)
        # the rules have seen the end (as they have 5 minutes later): the test alert resolved
        prometheus.wait_for(
            'ALERTS{alertname="PanelTestLiveRunTrains"}', lambda r: not r, timeout_s=2 * EVALUATION_S
        )
        end_s = time.time()
        # 5 minutes later the site constants have been evaluated since: so they are once, here
        prometheus.wait_for(f"timestamp(wattlog:site_pue) > {end_s}", timeout_s=2 * EVALUATION_S)
        figures = {run: ledger_figures(db, run) for run in ("done", "live")}
        assert live_j <= figures["live"]["joules"] + 1e-6  # the live figure was a part of the final one
        check_after(prometheus, figures, start_s, end_s)
    finally:
        for run in (done, live):
            run.end()
        for server in servers_open:
            server.close()


def check_during(prometheus: Prometheus, done: dict[str, Any], at_s: float) -> float:
    """While "live" runs and "done" has finished; returns the live run's joules then (Prometheus)."""
    queries = panels()
    [power] = queries["Cluster power"]
    live_power = values(prometheus, 'sum by (source) (wattlog_power_watts{run="live"})', at_s)
    assert values(prometheus, power, at_s) == pytest.approx(live_power)  # the live agent alone
    states = by_run(values(prometheus, queries["Agents up"][0], at_s))
    assert states == {"done": 2, "live": 1, "crashed": 0}  # finished, up, lost
    live_j = sum(values(prometheus, 'wattlog_energy_joules_total{run="live"}', at_s).values())
    [energy] = queries["Energy so far"]
    assert sum(values(prometheus, energy, at_s).values()) * 3600 == pytest.approx(done["joules"] + live_j)
    co2 = tonnes_of(prometheus, queries["CO2 so far and projected"][:2], at_s)
    assert co2["done"] == pytest.approx(done["co2_t"], rel=1e-6) and co2["live"] > 0
    [device] = queries["Energy by device and source"]
    table = {(k[2], k[3]): v * 3600 for k, v in values(prometheus, device, at_s).items() if k[0] == "done"}
    assert table == pytest.approx(done["devices"], abs=1e-3)  # a finished run's devices stay listed
    return live_j


def check_after(
    prometheus: Prometheus, figures: dict[str, dict[str, Any]], start_s: float, end_s: float
) -> None:
    """Five minutes after the last run ended: nothing is power now, every total is the ledger's."""
    at_s, queries = end_s + 300, panels()
    assert not prometheus.query(queries["Cluster power"][0], at_s=at_s)  # the board says "no live agent"
    done, live = figures["done"], figures["live"]
    [energy] = queries["Energy so far"]
    total_j = sum(values(prometheus, energy, at_s).values()) * 3600
    assert total_j == pytest.approx(done["joules"] + live["joules"], abs=1.0)  # to the joule, both runs
    co2 = tonnes_of(prometheus, queries["CO2 so far and projected"][:2], at_s)
    projected = tonnes_of(prometheus, queries["CO2 so far and projected"][2:], at_s)
    water = by_run(values(prometheus, queries["Water so far and projected"][0], at_s))
    per_joule = by_run(values(prometheus, queries["Tokens per joule"][0], at_s))
    remaining = tonnes_of(prometheus, queries["CO2 budget: spent, projected, remaining"][4:], at_s)
    for run, ledger in figures.items():
        assert co2[run] == pytest.approx(ledger["co2_t"], rel=1e-6), run
        assert projected[run] == pytest.approx(ledger["co2_t"] * PLANNED / ledger["tokens"], rel=1e-6), run
        assert water[run] == pytest.approx(ledger["water_kl"] * 1000, rel=1e-6), run
        assert per_joule[run] == pytest.approx(ledger["tokens"] / ledger["joules"], rel=1e-6), run
        assert remaining[run] == pytest.approx(BUDGET_T - ledger["co2_t"], rel=1e-6), run
    [device] = queries["Energy by device and source"]
    table = {(k[2], k[3]): v * 3600 for k, v in values(prometheus, device, at_s).items()}
    assert table == pytest.approx(done["devices"] | live["devices"], abs=1e-3)
    states = by_run(values(prometheus, queries["Agents up"][0], at_s))
    assert states == {"done": 2, "live": 2, "crashed": 0}
    assert set(by_run(values(prometheus, queries["Lost devices"][0], at_s)).values()) == {0}
    [intensity] = queries["Carbon intensity and its source"]
    assert [v for k, v in values(prometheus, intensity, at_s).items() if k[4]] == [0.332]
    check_histories(prometheus, queries, start_s, end_s)
    check_band(prometheus, queries["Energy and the agent's band (whole run)"], figures, end_s)


def check_band(
    prometheus: Prometheus, exprs: list[str], figures: dict[str, dict[str, Any]], end_s: float
) -> None:
    """The band panel at each run's last scrape: the ledger's energy, inside the ledger's band."""
    for run, ledger in figures.items():
        [mark] = prometheus.query(f'wattlog_agent_finished{{run="{run}"}}[1m]', at_s=end_s)
        last_s = float(mark["values"][-1][0])
        best, low, high = (by_run(values(prometheus, e, last_s))[run] * 3600 for e in exprs)
        assert best == pytest.approx(ledger["joules"], abs=1e-3)
        # the agent's whole-run band lies inside the ledger's sum of per-row bands (see the panel's text)
        assert ledger["band_j"][0] <= low < best < high <= ledger["band_j"][1]


def check_histories(
    prometheus: Prometheus, queries: dict[str, list[str]], start_s: float, end_s: float
) -> None:
    """Every other panel and annotation draws data over the runs' range up to 5 minutes after; the alert
    fired and resolved."""
    histories = {title: exprs for title, exprs in queries.items() if title not in NOW | TOTALS}
    assert "annotation alerts" in histories and "annotation checkpoints" in histories
    expected_empty = {"annotation restarts"}  # no run here resumes
    for title, exprs in histories.items():
        drawn = [series_over(prometheus, expr, start_s - 2, end_s + 300) for expr in exprs]
        assert any(drawn) != (title in expected_empty), f"{title}: {exprs}"
    [mfu] = series_over(prometheus, queries["MFU"][0], start_s - 2, end_s)
    assert mfu["metric"]["run"] == "live" and all(0 < float(v) <= 1 for _, v in mfu["values"])
    found = series_over(prometheus, queries["annotation alerts"][0], start_s - 2, end_s + 60)
    [alerts] = [a for a in found if a["metric"]["alertname"] == "PanelTestLiveRunTrains"]
    first_s, last_s = float(alerts["values"][0][0]), float(alerts["values"][-1][0])
    # a region from firing to resolved: it starts during the run and ends within a rule evaluation or two of
    # the run's end, well before the end of the queried range (the shipped non-finite-loss alert fires too)
    assert start_s < first_s and last_s < end_s
    assert any(a["metric"]["alertname"] == "WattlogNonFiniteLoss" for a in found)
