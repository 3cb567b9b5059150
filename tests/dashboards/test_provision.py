"""Provisioning through a real grafana-client against a loopback server that checks Grafana's API shapes."""

from __future__ import annotations

import re
import socket

import pytest
from pytest_httpserver import HTTPServer

from tests.dashboards.fake_grafana import FakeGrafana
from wattlog.cli import main
from wattlog.dashboards.provision import Outcome, ProvisionConfig, Provisioner, connect
from wattlog.errors import ConfigError, WattlogError

TOKEN = "glsa_test_token_0123456789"


@pytest.fixture
def grafana(httpserver: HTTPServer) -> FakeGrafana:
    fake = FakeGrafana(token=TOKEN)
    httpserver.expect_request(re.compile(".*")).respond_with_handler(fake.handle)
    return fake


def provision(httpserver: HTTPServer, token: str = TOKEN, **config: str) -> list:
    api = connect(httpserver.url_for("/"), environ={"GRAFANA_TOKEN": token}, timeout_s=5)
    return Provisioner(api, ProvisionConfig(**config)).run()


def test_first_run_creates_everything_with_documented_requests(
    httpserver: HTTPServer, grafana: FakeGrafana
) -> None:
    done = provision(httpserver)
    assert [(p.kind, p.uid, p.outcome) for p in done] == [
        ("datasource", "wattlog-prometheus", Outcome.CREATED),
        ("folder", "wattlog", Outcome.CREATED),
        ("dashboard", "wattlog-energy", Outcome.CREATED),
        ("dashboard", "wattlog-training", Outcome.CREATED),
    ]
    assert grafana.violations == []
    assert grafana.calls[0] == ("GET", "/api/health")
    assert grafana.datasources["wattlog-prometheus"]["type"] == "prometheus"
    assert grafana.dashboards["wattlog-energy"]["meta"]["folderUid"] == "wattlog"


def test_second_run_changes_nothing_and_a_change_updates_in_place(
    httpserver: HTTPServer, grafana: FakeGrafana
) -> None:
    provision(httpserver)
    posts = [c for c in grafana.calls if c[0] in ("POST", "PUT")]
    again = provision(httpserver)
    assert {p.outcome for p in again} == {Outcome.UNCHANGED}
    assert [c for c in grafana.calls if c[0] in ("POST", "PUT")] == posts  # no write at all
    changed = provision(httpserver, prometheus_url="http://prom.example:9090", folder_title="Energy")
    assert [p.outcome for p in changed[:2]] == [Outcome.UPDATED, Outcome.UPDATED]
    assert len(grafana.datasources) == 1 and len(grafana.folders) == 1 and len(grafana.dashboards) == 2
    assert grafana.datasources["wattlog-prometheus"]["url"] == "http://prom.example:9090"
    assert grafana.folders["wattlog"]["title"] == "Energy"
    assert grafana.violations == []


def test_a_dashboard_edited_in_grafana_is_overwritten_not_duplicated(
    httpserver: HTTPServer, grafana: FakeGrafana
) -> None:
    provision(httpserver)
    grafana.dashboards["wattlog-energy"]["dashboard"]["title"] = "edited by hand"
    done = provision(httpserver)
    assert [p.outcome for p in done if p.uid == "wattlog-energy"] == [Outcome.UPDATED]
    assert grafana.dashboards["wattlog-energy"]["dashboard"]["title"] == "wattlog: energy, carbon and water"
    assert grafana.dashboards["wattlog-energy"]["dashboard"]["version"] == 2
    assert len(grafana.dashboards) == 2


def test_wrong_token_is_one_clear_error_without_the_token(
    httpserver: HTTPServer, grafana: FakeGrafana
) -> None:
    with pytest.raises(ConfigError, match=r"refused the token \(401\).*GRAFANA_TOKEN") as error:
        provision(httpserver, token="wrong-token")
    assert "wrong-token" not in str(error.value)
    assert grafana.datasources == {}


def test_unreachable_url_is_one_clear_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = connect(f"http://127.0.0.1:{port}", environ={"GRAFANA_TOKEN": TOKEN}, timeout_s=2)
    with pytest.raises(ConfigError, match="cannot reach Grafana.*check --url"):
        Provisioner(api).run()


def test_missing_token_and_bad_url_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="set GRAFANA_TOKEN"):
        connect("http://127.0.0.1:3000", environ={})
    with pytest.raises(ConfigError, match="must start with http"):
        connect("127.0.0.1:3000", environ={"GRAFANA_TOKEN": TOKEN})
    with pytest.raises(ConfigError, match="40 characters"):
        ProvisionConfig(folder_uid="x" * 41)


def test_server_error_names_the_step(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/health").respond_with_json({"message": "boom"}, status=500)
    api = connect(httpserver.url_for("/"), environ={"GRAFANA_TOKEN": TOKEN}, timeout_s=5)
    with pytest.raises(WattlogError, match=r"could not check Grafana's health \(500\)"):
        Provisioner(api).run()


def test_cli_provisions_and_fails_in_one_line(
    httpserver: HTTPServer,
    grafana: FakeGrafana,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GRAFANA_TOKEN", TOKEN)
    assert main(["dashboards", "provision", "--url", httpserver.url_for("/")]) == 0
    out = capsys.readouterr().out
    assert "dashboard wattlog-energy: created" in out and TOKEN not in out
    monkeypatch.setenv("GRAFANA_TOKEN", "wrong-token")
    assert main(["dashboards", "provision", "--url", httpserver.url_for("/")]) == 2
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines at 80 columns when not a tty
    assert err.startswith("error: ") and err.count("error:") == 1
    assert "refused the token" in err and "wrong-token" not in err
