"""Start real Prometheus, Alertmanager and Pushgateway servers on 127.0.0.1 for integration tests.

Each server gets a free port, its own folder under the caller's temp dir (config,
storage, log) and is ready (``/-/ready`` answers 200) when returned. Stop it with
:meth:`Server.stop` (the ``servers`` fixture in conftest.py does that at teardown).
The Debian packages provide the binaries: prometheus, prometheus-alertmanager,
prometheus-pushgateway.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.waiting import wait_until

READY_TIMEOUT_S = 20.0

# name -> candidate executables (Debian names first, upstream names second)
BINARIES = {
    "prometheus": ("prometheus",),
    "alertmanager": ("prometheus-alertmanager", "alertmanager"),
    "pushgateway": ("prometheus-pushgateway", "pushgateway"),
    "victoria-metrics": ("victoria-metrics", "victoria-metrics-prod"),
}
PACKAGES = {"prometheus": "prometheus", "victoria-metrics": "victoria-metrics"}
"""Debian package of each server (the others are prometheus-NAME)."""


class BinaryMissing(RuntimeError):
    """The server's executable is not installed."""


class ServerFailed(RuntimeError):
    """The server exited or never became ready; the message ends with its log."""


def find_binary(name: str) -> str:
    """Path of the executable for `name` (a key of BINARIES).

    Raises:
        BinaryMissing: None of the candidates is on PATH or in /usr/bin.
    """
    for candidate in BINARIES[name]:
        path = shutil.which(candidate) or (
            f"/usr/bin/{candidate}" if Path(f"/usr/bin/{candidate}").exists() else None
        )
        if path:
            return path
    package = PACKAGES.get(name, f"prometheus-{name}")
    raise BinaryMissing(
        f"{' or '.join(BINARIES[name])} not found: apt-get install -y --no-install-recommends {package} "
        "(or run scripts/setup.sh --servers)"
    )


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the server binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout_s: float = 5.0) -> bytes:
    """GET `url` and return the body (raises urllib errors)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return bytes(response.read())


def http_json(url: str, method: str = "GET", body: Any = None, timeout_s: float = 5.0) -> Any:
    """Send a request with an optional JSON body and decode the JSON answer (None if empty)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


@dataclass
class Server:
    """A server process started by this module.

    Attributes:
        name: "prometheus", "alertmanager", "pushgateway" or "victoria-metrics".
        url: Base URL, e.g. http://127.0.0.1:40123 (no trailing slash).
        workdir: The server's own folder (config, storage, log).
        process: The running process.
    """

    name: str
    url: str
    workdir: Path
    process: subprocess.Popen[bytes]
    _log: Any = field(repr=False, default=None)

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(urllib.parse.urlsplit(self.url).port or 0)

    @property
    def address(self) -> str:
        """host:port, the form scrape targets and Alertmanager lists use."""
        return urllib.parse.urlsplit(self.url).netloc

    def log(self) -> str:
        """What the server wrote to stdout and stderr so far."""
        path = self.workdir / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """Terminate (kill after 5 s) and wait; idempotent."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None


@dataclass
class Prometheus(Server):
    """A Prometheus server with helpers over its HTTP API."""

    def query(self, expr: str, at_s: float | None = None) -> list[dict[str, Any]]:
        """Evaluate an instant query; returns `data.result` (vector or matrix entries)."""
        params = {"query": expr}
        if at_s is not None:
            params["time"] = f"{at_s:.3f}"
        answer = http_json(f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}")
        if answer.get("status") != "success":
            raise ServerFailed(f"query {expr!r} failed: {answer}")
        return list(answer["data"]["result"])

    def wait_for(
        self,
        expr: str,
        done: Callable[[list[dict[str, Any]]], bool] = bool,
        timeout_s: float = 20.0,
        poll_s: float = 0.5,
    ) -> list[dict[str, Any]]:
        """Poll `expr` until `done(result)`; the first increase() shows ~6-7 s after start.

        Raises:
            ServerFailed: Not done within `timeout_s` (the message holds the last result).
        """
        last: list[list[dict[str, Any]]] = []

        def answered() -> tuple[list[dict[str, Any]]] | None:
            last[:] = [self.query(expr)]
            return (last[0],) if done(last[0]) else None  # a tuple: an empty result can be the one awaited

        def failure() -> str:
            return (
                f"{expr!r} not as expected after {timeout_s} s; last result: {last[0]}\n{self.log()[-3000:]}"
            )

        try:
            (result,) = wait_until(answered, timeout_s, failure, poll_s=poll_s)
        except AssertionError as error:
            raise ServerFailed(str(error)) from None
        return result

    def reload(self) -> None:
        """Reload config and rules (POST /-/reload; started with --web.enable-lifecycle)."""
        urllib.request.urlopen(
            urllib.request.Request(f"{self.url}/-/reload", method="POST"), timeout=10
        ).close()


def _start(
    name: str,
    workdir: Path,
    args: Callable[[int], Sequence[str]],
    cls: type[Server] = Server,
    attempts: int = 3,
) -> Server:
    """Start `name` with args(port) until one attempt becomes ready (a picked port can be taken meanwhile)."""
    binary = find_binary(name)
    workdir.mkdir(parents=True, exist_ok=True)
    failure = ""
    for _ in range(attempts):
        port = free_port()
        log = (workdir / "server.log").open("ab")
        process = subprocess.Popen([binary, *args(port)], stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
        server = cls(name=name, url=f"http://127.0.0.1:{port}", workdir=workdir, process=process, _log=log)
        try:
            _wait_ready(server)
            return server
        except ServerFailed as error:
            server.stop()
            failure = str(error)
    raise ServerFailed(failure)


def answers(url: str, healthy: Callable[[bytes], bool] = lambda body: True) -> bool:
    """Whether a GET of `url` answers, with a body `healthy` accepts (a refused or failed GET: False)."""
    try:
        return healthy(http_get(url, timeout_s=1.0))
    except (urllib.error.URLError, OSError):
        return False


def _wait_ready(server: Server) -> None:
    def ready() -> bool:
        if server.process.poll() is not None:
            raise ServerFailed(
                f"{server.name} exited with {server.process.returncode}:\n{server.log()[-3000:]}"
            )
        return answers(f"{server.url}/-/ready")

    try:
        wait_until(
            ready,
            READY_TIMEOUT_S,
            lambda: f"{server.name} not ready after {READY_TIMEOUT_S} s:\n{server.log()[-3000:]}",
            poll_s=0.05,
        )
    except AssertionError as error:
        raise ServerFailed(str(error)) from None


def start_prometheus(
    workdir: Path,
    targets: Sequence[str] = (),
    *,
    scrape_interval_s: float = 1.0,
    evaluation_interval_s: float = 1.0,
    rule_files: Sequence[Path] = (),
    alertmanager_url: str | None = None,
    job: str = "wattlog",
    metrics_path: str = "/metrics",
    extra_scrape_configs: Sequence[Mapping[str, Any]] = (),
    remote_write_urls: Sequence[str] = (),
) -> Prometheus:
    """Start Prometheus scraping `targets` ("host:port") every `scrape_interval_s`.

    Args:
        workdir: Its folder (prometheus.yml, data/, server.log).
        targets: host:port of each target of the one static job.
        scrape_interval_s: Scrape interval (1 s keeps tests short).
        evaluation_interval_s: Rule evaluation interval.
        rule_files: Alerting/recording rule files to load.
        alertmanager_url: Send alerts there (e.g. an Alertmanager from :func:`start_alertmanager`).
        job: The job name of the static targets.
        metrics_path: Path scraped on each target.
        extra_scrape_configs: More scrape_configs entries, as Prometheus' YAML would hold them.
        remote_write_urls: Send every sample there too (e.g. VictoriaMetrics' /api/v1/write).

    Returns:
        The ready server; `.query()` and `.wait_for()` talk to its HTTP API.
    """
    scrape_configs: list[Mapping[str, Any]] = []
    if targets:
        scrape_configs.append(
            {
                "job_name": job,
                "honor_labels": True,  # keep the exporter's host label and a Pushgateway's job/instance
                "metrics_path": metrics_path,
                "static_configs": [{"targets": list(targets)}],
            }
        )
    scrape_configs.extend(extra_scrape_configs)
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": f"{scrape_interval_s:g}s",
            "evaluation_interval": f"{evaluation_interval_s:g}s",
        },
        "rule_files": [str(Path(p).resolve()) for p in rule_files],
        "scrape_configs": scrape_configs,
    }
    if remote_write_urls:
        # A short batch deadline so the long-term store catches up seconds after a scrape, not 5 s.
        queue = {"batch_send_deadline": "1s", "max_samples_per_send": 10000}
        config["remote_write"] = [{"url": u, "queue_config": queue} for u in remote_write_urls]
    if alertmanager_url:
        am = urllib.parse.urlsplit(alertmanager_url)
        config["alerting"] = {
            "alertmanagers": [{"scheme": am.scheme or "http", "static_configs": [{"targets": [am.netloc]}]}]
        }
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "prometheus.yml"
    config_path.write_text(json.dumps(config, indent=2))  # JSON is YAML: no yaml dependency here

    def args(port: int) -> list[str]:
        return [
            f"--config.file={config_path}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-lifecycle",
            # Alerts firing before the Alertmanager is discovered (~5 s) are resent after this, not 1 min.
            "--rules.alert.resend-delay=1s",
            "--log.level=warn",
        ]

    server = _start("prometheus", workdir, args, Prometheus)
    assert isinstance(server, Prometheus)
    return server


def start_victoria_metrics(workdir: Path, retention: str = "1d") -> Prometheus:
    """Start single-node VictoriaMetrics with its own storage; it takes remote_write and answers PromQL.

    Started with ``-search.latencyOffset=1s``: by default it hides the last ~30 s of samples from
    queries, which a short test would read as missing data.

    Returns:
        The ready server; `.query()` speaks Prometheus' query API (at /api/v1/query).
    """

    def args(port: int) -> list[str]:
        return [
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-storageDataPath={workdir / 'data'}",
            f"-retentionPeriod={retention}",
            "-search.latencyOffset=1s",
            "-loggerLevel=WARN",
        ]

    server = _start("victoria-metrics", workdir, args, Prometheus)
    assert isinstance(server, Prometheus)
    return server


def start_alertmanager(workdir: Path, config: str | Mapping[str, Any]) -> Server:
    """Start Alertmanager with `config` (YAML text or a mapping) and a fresh storage folder.

    A running Alertmanager does not resend an alert it already sent, so each test
    should start its own. Clustering is off (no gossip port to collide on).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "alertmanager.yml"
    config_path.write_text(config if isinstance(config, str) else json.dumps(config, indent=2))

    def args(port: int) -> list[str]:
        return [
            f"--config.file={config_path}",
            f"--storage.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ]

    return _start("alertmanager", workdir, args)


def start_pushgateway(workdir: Path) -> Server:
    """Start a Pushgateway (in-memory: nothing persists after stop)."""

    def args(port: int) -> list[str]:
        return [f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn", "--web.enable-admin-api"]

    return _start("pushgateway", workdir, args)


@contextlib.contextmanager
def wattlog_process(
    args: Sequence[str],
    log_path: Path,
    health_url: str,
    *,
    healthy: Callable[[bytes], bool] = lambda body: True,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 20.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run `wattlog ARGS...` as its own process until `health_url` answers healthy; stop it after.

    It runs in a session of its own so that its children (`streamlit run`) stop with it.
    """
    command = [sys.executable, "-c", "from wattlog.cli import run; run()", *args]
    name = f"wattlog {args[0]}"
    with serving_process(
        command, log_path, health_url, name, healthy=healthy, env=env, timeout_s=timeout_s
    ) as p:
        yield p


@contextlib.contextmanager
def serving_process(
    command: Sequence[str],
    log_path: Path,
    health_url: str,
    name: str,
    *,
    healthy: Callable[[bytes], bool] = lambda body: True,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 20.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run `command` (`name` in messages) in a session of its own until `health_url` answers
    healthy; stop it, and its children, after."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            env={**os.environ, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:

            def ready() -> bool:
                if answers(health_url, healthy):
                    return True
                assert process.poll() is None, f"{name} exited with {process.returncode}:\n{_tail(log_path)}"
                return False

            wait_until(
                ready, timeout_s, lambda: f"{name} not healthy after {timeout_s} s:\n{_tail(log_path)}", 0.1
            )
            yield process
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)


def _tail(log: Path) -> str:
    """The end of a server's log (what a failure shows)."""
    return log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
