"""Provision Grafana through its HTTP API: the Prometheus data source, a folder, the dashboards.

Idempotent: each object is looked up by its fixed uid first and updated in place
(or left alone when already identical), never duplicated. The API token comes from
the GRAFANA_TOKEN environment variable only, so it never appears in a shell history,
a process list or a log line. The client (grafana-client's GrafanaApi) is injected,
so tests drive a real one against a loopback server that checks the documented
request shapes (tests/dashboards/test_provision.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from wattlog.dashboards.energy_board import energy_dashboard
from wattlog.dashboards.panels import DATASOURCE_UID
from wattlog.dashboards.training_board import training_dashboard
from wattlog.errors import ConfigError, WattlogError
from wattlog.http_adapters import bounded_session

if TYPE_CHECKING:
    from grafana_client.api import GrafanaApi

log = logging.getLogger(__name__)

TOKEN_ENV = "GRAFANA_TOKEN"  # noqa: S105 - the name of an environment variable, not a secret
_T = TypeVar("_T")
_MAX_ANSWER_BYTES = 16 << 20  # Grafana's answers are a dashboard's JSON at most (~100 kB here)


class Outcome(StrEnum):
    """What provisioning did to one object."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class Provisioned:
    """One object provisioned: its kind (datasource, folder, dashboard), uid and outcome."""

    kind: str
    uid: str
    outcome: Outcome


@dataclass
class ProvisionConfig:
    """What to create in Grafana."""

    prometheus_url: str = "http://prometheus:9090"
    """URL Grafana's server (not this machine) uses to reach Prometheus."""
    folder_uid: str = "wattlog"
    """uid of the dashboards' folder (at most 40 characters)."""
    folder_title: str = "wattlog"
    """Title of the dashboards' folder."""
    datasource_name: str = "Prometheus (wattlog)"
    """Name of the data source (its uid is fixed: the dashboards refer to it)."""

    def __post_init__(self) -> None:
        if not self.prometheus_url.startswith(("http://", "https://")):
            raise ConfigError(f"--prometheus-url {self.prometheus_url!r} must start with http:// or https://")
        if not 0 < len(self.folder_uid) <= 40:
            raise ConfigError("--folder-uid must have 1 to 40 characters (Grafana's limit)")


def connect(url: str, *, environ: Mapping[str, str] = os.environ, timeout_s: float = 10.0) -> GrafanaApi:
    """A Grafana client for `url`, authenticated with the token in $GRAFANA_TOKEN.

    Raises:
        ConfigError: No token in the environment, or the URL is not http(s).
    """
    from grafana_client.api import GrafanaApi

    token = environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ConfigError(f"set {TOKEN_ENV} to a Grafana service-account token (Editor or Admin role)")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--url {url!r} must start with http:// or https://")
    api = GrafanaApi.from_url(url.rstrip("/"), credential=token, timeout=timeout_s)
    # niquests' timeout bounds each read: the adapter bounds each whole answer and its size
    bounded_session(api.client.s, max_bytes=_MAX_ANSWER_BYTES, timeout_s=timeout_s)
    return api


class Provisioner:
    """Creates or updates wattlog's objects in one Grafana.

    Args:
        api: A grafana-client GrafanaApi (see :func:`connect`).
        config: What to create.
        dashboards: Dashboard models to upload (default: those of dashboards.build).
    """

    def __init__(
        self, api: GrafanaApi, config: ProvisionConfig | None = None, dashboards: list[dict] | None = None
    ) -> None:
        self._api = api
        self._config = config or ProvisionConfig()
        self._dashboards = [energy_dashboard(), training_dashboard()] if dashboards is None else dashboards

    def run(self) -> list[Provisioned]:
        """Check Grafana's health, then provision data source, folder and dashboards in that order.

        Raises:
            WattlogError: Grafana unreachable, token refused, or a request rejected (one line, no token).
        """
        health = self._call("check Grafana's health", lambda: self._api.client.GET("/health"))
        if health.get("database") != "ok":
            raise WattlogError(f"Grafana at {self._where()} reports database {health.get('database')!r}")
        done = [self._datasource(), self._folder()]
        done += [self._dashboard(board) for board in self._dashboards]
        return done

    def _datasource(self) -> Provisioned:
        c = self._config
        wanted = {
            "uid": DATASOURCE_UID,
            "name": c.datasource_name,
            "type": "prometheus",
            "access": "proxy",
            "url": c.prometheus_url,
            "isDefault": False,
            "jsonData": {"timeInterval": "5s"},
        }
        found = self._get(
            "read the data source", lambda: self._api.datasource.get_datasource_by_uid(DATASOURCE_UID)
        )
        if found is None:
            self._call("create the data source", lambda: self._api.datasource.create_datasource(wanted))
            return Provisioned("datasource", DATASOURCE_UID, Outcome.CREATED)
        if all(found.get(k) == v for k, v in wanted.items()):
            return Provisioned("datasource", DATASOURCE_UID, Outcome.UNCHANGED)
        self._call(
            "update the data source",
            lambda: self._api.datasource.update_datasource_by_uid(DATASOURCE_UID, wanted),
        )
        return Provisioned("datasource", DATASOURCE_UID, Outcome.UPDATED)

    def _folder(self) -> Provisioned:
        c = self._config
        found = self._get("read the folder", lambda: self._api.folder.get_folder(c.folder_uid))
        if found is None:
            self._call(
                "create the folder", lambda: self._api.folder.create_folder(c.folder_title, uid=c.folder_uid)
            )
            return Provisioned("folder", c.folder_uid, Outcome.CREATED)
        if found.get("title") == c.folder_title:
            return Provisioned("folder", c.folder_uid, Outcome.UNCHANGED)
        self._call(
            "rename the folder",
            lambda: self._api.folder.update_folder(c.folder_uid, title=c.folder_title, overwrite=True),
        )
        return Provisioned("folder", c.folder_uid, Outcome.UPDATED)

    def _dashboard(self, board: dict[str, Any]) -> Provisioned:
        uid = board["uid"]
        found = self._get(f"read dashboard {uid}", lambda: self._api.dashboard.get_dashboard(uid))
        if found is not None:
            current = {k: v for k, v in found.get("dashboard", {}).items() if k not in ("id", "version")}
            mine = {k: v for k, v in board.items() if k not in ("id", "version")}
            if current == mine and found.get("meta", {}).get("folderUid") == self._config.folder_uid:
                return Provisioned("dashboard", uid, Outcome.UNCHANGED)
        # overwrite=True replaces the dashboard of the same uid, or of the same title in the folder.
        body = {
            "dashboard": {**board, "id": None},
            "folderUid": self._config.folder_uid,
            "overwrite": True,
            "message": "provisioned by wattlog",
        }
        self._call(f"save dashboard {uid}", lambda: self._api.dashboard.update_dashboard(body))
        return Provisioned("dashboard", uid, Outcome.CREATED if found is None else Outcome.UPDATED)

    def _where(self) -> str:
        return self._api.url or self._api.client.url_host

    def _get(self, what: str, request: Callable[[], _T]) -> _T | None:
        """Run a lookup; None when Grafana answers 404."""
        from grafana_client.client import GrafanaClientError

        def lookup() -> _T | None:
            try:
                return request()
            except GrafanaClientError as error:
                if error.status_code == 404:
                    return None
                raise

        return self._call(what, lookup)

    def _call(self, what: str, request: Callable[[], _T]) -> _T:
        """Run one request, turning transport and HTTP errors into one WattlogError line."""
        import niquests
        from grafana_client.client import GrafanaException

        try:
            return request()
        except niquests.exceptions.RequestException as error:
            raise ConfigError(
                f"cannot reach Grafana at {self._where()} to {what} ({type(error).__name__}): check --url"
            ) from error
        except GrafanaException as error:
            raise self._error(what, error) from error

    def _error(self, what: str, error: Exception) -> WattlogError:
        status = getattr(error, "status_code", 0)
        if status in (401, 403):
            return ConfigError(
                f"Grafana at {self._where()} refused the token ({status}) when asked to {what}: "
                f"set {TOKEN_ENV} to a valid service-account token with the Editor or Admin role"
            )
        if status == 0:
            return ConfigError(f"cannot reach Grafana at {self._where()} to {what}: check --url")
        message = getattr(error, "message", "") or str(error)
        return WattlogError(f"Grafana at {self._where()} could not {what} ({status}): {message}")
