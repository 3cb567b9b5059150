"""Receive Alertmanager's (and Grafana's) webhook and record each alert as an event of its run.

`wattlog webhook serve` runs :class:`WebhookReceiver`: POST /alerts with the
Alertmanager webhook payload (version "4": version, groupKey, truncatedAlerts, status,
receiver, groupLabels, commonLabels, commonAnnotations, externalURL, alerts; newer
fields such as notification_reason are accepted; Grafana sends version "1" with
`values`). Rules:

- Authentication first: `Authorization: Bearer $WATTLOG_WEBHOOK_TOKEN`, or an HMAC
  of the body, `X-Wattlog-Signature: sha256=<hex>` keyed by $WATTLOG_WEBHOOK_SECRET
  (either one when both are set). No credential configured: the server won't start.
- Bad input gets a 4xx and nothing is recorded: body over the size limit (413),
  not JSON or not the payload's shape (400), wrong credentials (401).
- An alert goes to the run its `run` label (or commonLabels' run) names. One whose run
  is not in the ledger (no `run` label, a run recorded elsewhere) is recorded against its
  host: in the ledger's runs on that host at its time (dashboards.alert_targets), with the
  run it named kept in the payload's labels; no run is ever made for it. An alert with
  neither a known run nor a host with a run makes the payload 422, since it cannot be
  attributed. A condition seen after its run stopped measuring is recorded as `stale`
  (Alertmanager's status kept as `alertmanager_status`), never as resolved.
- An alert the ledger could never store (a NUL byte, a host label over 200 characters) is
  rejected alone, with its reason in the answer's
  `rejected`; the rest of its batch is recorded (a 5xx would make Alertmanager resend
  the whole batch forever).
- Nothing is recorded twice: each event carries an idempotency key made of the
  alert's fingerprint, startsAt and status, so Alertmanager's resends are skipped.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from wattlog.dashboards.alert_checks import PayloadError as PayloadError
from wattlog.dashboards.alert_checks import labels_of, time_s_of, unstorable
from wattlog.dashboards.alert_targets import host_runs, status_in
from wattlog.errors import ConfigError, LedgerError
from wattlog.events import EventCategory, EventKind
from wattlog.serving import CLOSE_TIMEOUT_S, BoundedHTTPServer
from wattlog.untrusted import loads_json

if TYPE_CHECKING:
    from wattlog.accounting.ledger import Ledger

log = logging.getLogger(__name__)

TOKEN_ENV = "WATTLOG_WEBHOOK_TOKEN"  # noqa: S105 - the name of an environment variable, not a secret
SECRET_ENV = "WATTLOG_WEBHOOK_SECRET"  # noqa: S105 - the name of an environment variable, not a secret
SIGNATURE_HEADER = "X-Wattlog-Signature"
MAX_BODY_BYTES = 1 << 20
EVENT_KIND = EventKind.ALERT


@dataclass(frozen=True, slots=True)
class Auth:
    """The receiver's credentials: a bearer token, an HMAC secret, or both."""

    token: str = ""
    secret: str = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Auth:
        """Read $WATTLOG_WEBHOOK_TOKEN and $WATTLOG_WEBHOOK_SECRET.

        Raises:
            ConfigError: Neither is set (an open receiver would record anyone's alerts).
        """
        auth = cls(environ.get(TOKEN_ENV, "").strip(), environ.get(SECRET_ENV, "").strip())
        if not (auth.token or auth.secret):
            raise ConfigError(f"set {TOKEN_ENV} (bearer token) or {SECRET_ENV} (HMAC secret) before serving")
        return auth

    def check(self, headers: Mapping[str, str], body: bytes) -> None:
        """Raise PayloadError(401) unless the bearer token or the body's HMAC signature is right.

        Headers are compared as bytes: compare_digest refuses a str with non-ASCII characters,
        and a client may send any byte (http.server decodes headers as Latin-1).
        """
        if self.token and _same(headers.get("Authorization", ""), f"Bearer {self.token}"):
            return
        if self.secret and _same(headers.get(SIGNATURE_HEADER, ""), sign(self.secret, body)):
            return
        raise PayloadError(401, "missing or wrong credentials")


def _same(given: str, expected: str) -> bool:
    """Constant-time comparison of a header with its expected value, whatever characters it holds."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


def sign(secret: str, body: bytes) -> str:
    """The signature header value of `body`: ``sha256=<hex HMAC-SHA256>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class Alert:
    """One alert of a payload, attributed to a run."""

    run: str
    name: str
    status: str
    time_s: float
    key: str
    payload: dict[str, Any]


def parse(body: bytes) -> list[Alert]:
    """The alerts of a webhook body, shape-checked (runs not yet resolved).

    Raises:
        PayloadError: 400 when the body is not the webhook payload.
    """
    try:
        data = loads_json(body)  # bounded depth: nested brackets gave a RecursionError, no answer
    except ValueError as error:  # not UTF-8, not JSON, or nested too deep
        raise PayloadError(400, f"body is not JSON: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("alerts"), list) or not data["alerts"]:
        raise PayloadError(400, "payload needs a non-empty `alerts` list")
    if data.get("status") not in ("firing", "resolved") or not isinstance(data.get("version"), str):
        raise PayloadError(400, "payload needs `version` and `status` (firing or resolved)")
    common = labels_of(data.get("commonLabels", {}), "commonLabels")
    alerts = []
    for i, raw in enumerate(data["alerts"]):
        if not isinstance(raw, dict) or raw.get("status") not in ("firing", "resolved"):
            raise PayloadError(400, f"alerts[{i}] needs a status (firing or resolved)")
        labels = labels_of(raw.get("labels"), f"alerts[{i}].labels")
        annotations = labels_of(raw.get("annotations", {}), f"alerts[{i}].annotations")
        starts = raw.get("startsAt")
        time_s = time_s_of(starts, f"alerts[{i}].startsAt")
        if raw["status"] == "resolved" and raw.get("endsAt"):
            time_s = time_s_of(raw["endsAt"], f"alerts[{i}].endsAt")
        fingerprint = (
            raw.get("fingerprint")
            or hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]
        )
        key = hashlib.sha256(f"{fingerprint}|{starts}|{raw['status']}".encode()).hexdigest()[:32]
        payload = {
            "alertname": labels.get("alertname", ""),
            "status": raw["status"],
            "labels": labels,
            "annotations": annotations,
            "fingerprint": fingerprint,
            "startsAt": starts,
            "endsAt": raw.get("endsAt"),
            "generatorURL": raw.get("generatorURL", ""),
            "receiver": data.get("receiver", ""),
            "idempotency_key": key,
        }
        if "values" in raw:  # Grafana's webhook
            payload["values"] = raw["values"]
        run = labels.get("run") or common.get("run", "")
        alerts.append(Alert(run, payload["alertname"], raw["status"], time_s, key, payload))
    return alerts


def host_of(alert: Alert) -> str:
    """The host an alert is about: its `host` label, else its `instance` without the port."""
    labels = alert.payload.get("labels", {})
    host = labels.get("host") or labels.get("instance", "").rsplit(":", 1)[0]
    return str(host).strip()


def describe(alert: Alert) -> str:
    """One alert in a log line: name, status, run, host and fingerprint (each cut to 80 characters).

    >>> describe(Alert("r1", "WattlogPowerAboveLimit", "firing", 0.0, "k", {"fingerprint": "ab12"}))
    "alert 'WattlogPowerAboveLimit' firing (run 'r1', host '-', fingerprint ab12)"
    """
    host = host_of(alert) or "-"
    return (
        f"alert {alert.name[:80]!r} {alert.status} (run {alert.run[:80] or '-'!r}, host {host[:80]!r}, "
        f"fingerprint {str(alert.payload.get('fingerprint', '-'))[:80]})"
    )


class AlertRecorder:
    """Records parsed alerts as ledger events, all or nothing per payload, never twice.

    Args:
        ledger: The ledger to write to.
    """

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._lock = threading.Lock()  # check-then-insert must not interleave between requests

    def record(self, alerts: list[Alert]) -> tuple[int, int, list[dict[str, Any]]]:
        """Store the alerts the ledger can hold; returns (recorded, duplicates, rejected).

        An alert the ledger could never store (a NUL byte, a run or host name over its
        column) is rejected alone, as {"index", "alertname", "reason"}: retrying would fail
        the same way, so it must not hold back the valid alerts of its batch.

        Raises:
            PayloadError: 422 when an alert names neither a run of the ledger nor a host.
            LedgerError: The database failed.
        """
        rejected = []
        valid = []
        for i, alert in enumerate(alerts):
            reason = unstorable(alert.run, alert.name, host_of(alert), alert.payload)
            if reason:
                log.warning("webhook: rejected %s: %s", describe(alert), reason)
                rejected.append({"index": i, "alertname": alert.name[:200], "reason": reason})
            else:
                valid.append(alert)
        recorded, duplicates = self._record(valid)
        return recorded, duplicates, rejected

    def _record(self, alerts: list[Alert]) -> tuple[int, int]:
        with self._lock:
            seen: dict[str, set[str]] = {}
            targets: list[list[str]] = []
            for alert in alerts:
                runs = self._targets(alert, seen)
                for run in runs:
                    if run not in seen:
                        seen[run] = self._recorded_keys(run)
                targets.append(runs)
            recorded = duplicates = 0
            for alert, runs in zip(alerts, targets, strict=True):
                for run in runs:
                    if alert.key in seen[run]:
                        duplicates += 1
                        log.info("webhook: accepted %s: a resend, already in %s", describe(alert), run)
                        continue
                    status = status_in(self._ledger, run, alert.status, alert.time_s)
                    payload = alert.payload | {"status": status, "alertmanager_status": alert.status}
                    self._ledger.record_event(
                        run, EVENT_KIND, time_s=alert.time_s, category=EventCategory.ALERT, payload=payload
                    )
                    seen[run].add(alert.key)
                    recorded += 1
                    stale = "" if status == alert.status else f" as {status} (its run had stopped measuring)"
                    log.info("webhook: accepted %s: recorded in %s%s", describe(alert), run, stale)
            return recorded, duplicates

    def _targets(self, alert: Alert, known: Mapping[str, set[str]]) -> list[str]:
        """The ledger runs an alert is recorded in: its own, else its host's at its time."""
        if alert.run and (alert.run in known or self._ledger.find_run(alert.run) is not None):
            return [alert.run]
        host = host_of(alert)
        runs = host_runs(self._ledger, host, alert.time_s) if host else []
        if not runs:
            named = f"names unknown run {alert.run!r}" if alert.run else "has no `run` label"
            where = f"no run of the ledger on host {host!r}" if host else "no host or instance label"
            raise PayloadError(422, f"alert {alert.name!r} {named} and {where}: nothing recorded")
        return runs

    def _recorded_keys(self, run: str) -> set[str]:
        events = self._ledger.events(run)
        return {e.payload.get("idempotency_key", "") for e in events if e.kind == EVENT_KIND}


class WebhookReceiver:
    """The HTTP endpoint: POST /alerts on host:port (127.0.0.1 by default).

    Args:
        recorder: Where alerts go.
        auth: Credentials every request must carry.
        host: Address to bind.
        port: Port to bind (0: any free port).
        max_body_bytes: Larger bodies get 413 unread.
        close_timeout_s: How long :meth:`close` waits for the serving thread and the requests
            being handled before it warns and goes on.
    """

    def __init__(
        self,
        recorder: AlertRecorder,
        auth: Auth,
        host: str = "127.0.0.1",
        port: int = 9465,
        max_body_bytes: int = MAX_BODY_BYTES,
        close_timeout_s: float = CLOSE_TIMEOUT_S,
    ) -> None:
        self._recorder, self._auth, self._max = recorder, auth, max_body_bytes
        self._close_timeout_s = close_timeout_s
        self._address = (host, port)
        self._server: BoundedHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL of the running server (POST to url + "/alerts")."""
        if self._server is None:
            raise ConfigError("the webhook receiver is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def handle(self, path: str, headers: Mapping[str, str], read: Any) -> tuple[int, dict[str, Any]]:
        """Process one POST; returns (HTTP status, JSON answer). `read(n)` reads n body bytes."""
        try:
            if path.rstrip("/") != "/alerts":
                raise PayloadError(404, "POST alerts to /alerts")
            length = headers.get("Content-Length")
            if length is None or not length.isdigit():
                raise PayloadError(411, "Content-Length required")
            if int(length) > self._max:
                raise PayloadError(413, f"body of {length} bytes is over the {self._max}-byte limit")
            body = read(int(length))
            self._auth.check(headers, body)
            recorded, duplicates, rejected = self._recorder.record(parse(body))
        except PayloadError as error:
            log.warning("webhook refused (%d): %s", error.status, error)
            return error.status, {"error": str(error)}
        except LedgerError as error:
            log.error("webhook could not record: %s", error)
            return 503, {"error": str(error)}  # Alertmanager retries on 5xx: the ledger may come back
        log.info(
            "webhook: payload: %d recorded, %d resends, %d rejected", recorded, duplicates, len(rejected)
        )
        answer: dict[str, Any] = {"recorded": recorded, "duplicates": duplicates}
        if rejected:  # 200 all the same: a resend would be rejected again, and the rest is stored
            answer["rejected"] = rejected
        return 200, answer

    def start(self) -> WebhookReceiver:
        """Bind and serve in a background thread."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                status, answer = receiver.handle(self.path, self.headers, self.rfile.read)  # type: ignore[arg-type]
                self._answer(status, answer)

            def do_GET(self) -> None:  # noqa: N802
                self._answer(200, {"status": "ok"}) if self.path == "/health" else self._answer(405, {})

            def _answer(self, status: int, answer: dict[str, Any]) -> None:
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if status >= 400:
                    self.send_header("Connection", "close")  # an unread body must not poison the next request
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                log.debug("webhook %s %s", self.client_address[0], format % args)

        try:
            # a backlog of 128 and bounded workers: a burst of posts is queued or answered 503, never reset
            self._server = BoundedHTTPServer(self._address, Handler)
            self._server.close_timeout_s = self._close_timeout_s
        except OSError as error:
            raise ConfigError(
                f"cannot listen on {self._address[0]}:{self._address[1]}: {error.strerror}; "
                "pick another --port"
            ) from error
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="wattlog-webhook", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> tuple[str, ...]:
        """Stop serving, release the port and verify that the serving thread and the workers stopped.

        Returns:
            Names of the threads still running after ``close_timeout_s`` (each logged as a warning;
            e.g. a request stuck in a hung ledger); empty when all stopped.
        """
        stuck: tuple[str, ...] = ()
        if self._server is not None:
            stuck = self._server.stop(self._thread)
            self._server = None
        self._thread = None
        return stuck

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
