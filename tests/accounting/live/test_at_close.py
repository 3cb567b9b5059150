"""A run's hours fetched at its close: stored when the provider answers, one line when it does not."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.accounting.live.conftest import T0
from wattlog.accounting.carbon.catalog import load_series
from wattlog.accounting.carbon.intensity.hours import hour_start_s, iso_hour
from wattlog.accounting.carbon.intensity.live import ukgrid
from wattlog.accounting.carbon.intensity.live.at_close import budgeted, fetch_at_close
from wattlog.accounting.carbon.intensity.live.client import ProviderError
from wattlog.accounting.carbon.intensity.live.providers import ProviderContext
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, Status, make_engine
from wattlog.errors import LedgerError
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.session import RunSession, SessionConfig

H = 3600
SITES = """\
[sites.gbdc]
pue = 1.2
wue_onsite_l_per_kwh = 0.0
wue_offsite_l_per_kwh = 1.29
carbon_intensity_kg_per_kwh = 0.3

[sites.gbdc.intensity]
source = "ukgrid"
zone = "GB"
"""


@pytest.fixture
def sites_file(tmp_path: Path) -> Path:
    path = tmp_path / "sites.toml"
    path.write_text(SITES, encoding="utf-8")
    return path


def _uk_answer(request: Request) -> Response:
    """Every half hour of the asked span at 100 g/kWh (the API's /intensity/FROM/TO shape)."""
    _, _, start, end = request.path.split("/")
    t, stop = (int(datetime.fromisoformat(x.replace("Z", "+00:00")).timestamp()) for x in (start, end))
    halves = []
    while t < stop:
        halves.append({"from": iso_hour(t), "to": iso_hour(t + 1800), "intensity": {"actual": 100}})
        t += 1800
    return Response(json.dumps({"data": halves}), content_type="application/json")


def _ended_run(ledger: Ledger, start_s: float, end_s: float) -> None:
    run = ledger.start_run("r1", RunSpec(site="gbdc"), start_s=start_s)
    ledger.end_run(run.id, Status.FINISHED, end_s=end_s)


def test_a_closing_run_stores_its_hours(
    httpserver: HTTPServer, context: Callable[..., ProviderContext], sites_file: Path, tmp_path: Path
) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    _ended_run(ledger, T0 + 600, T0 + 2 * H + 600)
    httpserver.expect_request(re.compile("/intensity/.*")).respond_with_handler(_uk_answer)
    done = fetch_at_close(ledger, "r1", site_catalog(sites_file), context())
    assert done is not None and done.ok and "stored 3 hours" in done.line and "ukgrid:GB" in done.line
    assert sorted(load_series(ledger, "ukgrid:GB").kg_per_kwh_by_hour) == [T0, T0 + H, T0 + 2 * H]


def test_a_provider_past_the_budget_is_one_line_and_stores_nothing(
    httpserver: HTTPServer,
    context: Callable[..., ProviderContext],
    sleeps: list[float],
    sites_file: Path,
    tmp_path: Path,
) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    _ended_run(ledger, T0, T0 + H)
    rate_limited = Response("slow down", status=429, headers={"Retry-After": "30"})
    httpserver.expect_request(re.compile("/intensity/.*")).respond_with_response(rate_limited)
    done = fetch_at_close(ledger, "r1", site_catalog(sites_file), context(), budget_s=10.0)
    assert done is not None and not done.ok
    assert "would pass the 10 s budget" in done.line and "\n" not in done.line
    assert "wattlog intensity fetch --run r1 --site gbdc" in done.line
    assert sleeps == []  # the 30 s wait was refused, not slept
    with pytest.raises(LedgerError):
        load_series(ledger, "ukgrid:GB")


def test_a_site_without_a_provider_fetches_nothing(tmp_path: Path, sites_file: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    ledger.start_run("r1", RunSpec(site="jupiter"))
    assert fetch_at_close(ledger, "r1", site_catalog(sites_file)) is None


def test_the_budget_bounds_each_request_and_refuses_a_late_wait() -> None:
    now = [0.0]
    asked: list[float] = []

    def opener(request: object, timeout: float) -> object:
        asked.append(timeout)
        now[0] += 7.0
        raise TimeoutError("slow")

    inner = ProviderContext(opener=opener, sleep=lambda s: None)
    limited = budgeted(inner, 10.0, clock=lambda: now[0])
    with pytest.raises(TimeoutError):
        limited.opener("req", timeout=30.0)
    assert asked == [10.0]  # not the client's 30 s
    with pytest.raises(ProviderError, match="budget"):
        limited.sleep(5.0)  # 7 s spent: a 5 s wait passes the 10 s


def test_a_run_session_fetches_its_hours_when_it_closes(
    httpserver: HTTPServer, sites_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ukgrid, "BASE_URL", httpserver.url_for(""))
    httpserver.expect_request(re.compile("/intensity/.*")).respond_with_handler(_uk_answer)
    db = f"sqlite:///{tmp_path / 'l.db'}"
    config = SessionConfig(
        "s", site="gbdc", db=db, agent_config=AgentConfig(port=None, flush_s=0.05, lock_dir=tmp_path)
    )
    environ = {"WATTLOG_SITES_FILE": str(sites_file)}
    session = RunSession(config, sensors=[SimulatedSensor(simulated_gpus(1))], environ=environ).start()
    session.close(Status.FINISHED)
    ledger = Ledger(make_engine(db))
    info = ledger.get_run("s")
    stored = load_series(ledger, "ukgrid:GB").kg_per_kwh_by_hour
    assert info.site == "gbdc" and hour_start_s(info.start_s) in stored
    assert stored[hour_start_s(info.start_s)] == pytest.approx(0.1)


def test_the_first_node_of_a_job_fetches_its_hours_when_it_closes(
    httpserver: HTTPServer, sites_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wattlog.accounting.fleet.node import NodeAgent, NodeOptions

    monkeypatch.setattr(ukgrid, "BASE_URL", httpserver.url_for(""))
    httpserver.expect_request(re.compile("/intensity/.*")).respond_with_handler(_uk_answer)
    db = f"sqlite:///{tmp_path / 'l.db'}"
    agent = AgentConfig(port=None, flush_s=0.05, host="n0", lock_dir=tmp_path / "locks")
    environ = {"SLURM_JOB_ID": "7", "SLURM_NNODES": "2", "WATTLOG_SITES_FILE": str(sites_file)}
    for node_id in ("1", "0"):  # the second node asks nothing; the first fetches for the job
        options = NodeOptions(run="job", db=db, agent=agent, site="gbdc")
        node = NodeAgent(options, {**environ, "SLURM_NODEID": node_id}, [SimulatedSensor(simulated_gpus(1))])
        node.start().close()
        assert len(httpserver.log) == (0 if node_id == "1" else 1)
    start_s = Ledger(make_engine(db)).get_run("job").start_s
    assert hour_start_s(start_s) in load_series(Ledger(make_engine(db)), "ukgrid:GB").kg_per_kwh_by_hour
