"""Send wattlog's own events (failed health checks, instabilities) to a webhook URL.

Two body styles: ``json`` (wattlog's event as a JSON object, for any receiver,
including another wattlog's `webhook serve` when it carries a `run` label) and
``slack`` (``{"text": ...}``, which Slack, Mattermost and Teams-compatible
incoming webhooks accept). Retries are bounded with exponential backoff; only
connection failures, timeouts, 429 and 5xx are retried. URLs of incoming webhooks
carry their secret in the path, so logs and errors name only scheme and host.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from wattlog.dashboards.webhooks import SIGNATURE_HEADER, sign
from wattlog.errors import ConfigError, WattlogError
from wattlog.events import INSTABILITIES, EventKind
from wattlog.http_exchange import open_url

log = logging.getLogger(__name__)

INSTABILITY_KINDS: tuple[str, ...] = tuple(sorted(INSTABILITIES))
"""Event kinds sent by default, besides health checks that failed."""


def redact(url: str) -> str:
    """`url` without its path, query or credentials: what may appear in a log."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}/..."


@dataclass
class Notifier:
    """Posts events to one webhook URL.

    Args:
        url: The webhook URL (http or https).
        style: ``json`` or ``slack``.
        token: Sent as ``Authorization: Bearer`` when set.
        secret: Signs the body (X-Wattlog-Signature, HMAC-SHA256) when set.
        attempts: Tries in all (>= 1).
        backoff_s: Wait before the 2nd try; doubles each time.
        timeout_s: Per-request timeout.
        sleep: Injected for tests.
        opener: Injected for tests (urllib.request.urlopen's signature).
    """

    url: str
    style: Literal["json", "slack"] = "json"
    token: str = ""
    secret: str = ""
    attempts: int = 4
    backoff_s: float = 0.5
    timeout_s: float = 5.0
    sleep: Callable[[float], None] = time.sleep
    opener: Callable[..., Any] = open_url

    def __post_init__(self) -> None:
        if urlsplit(self.url).scheme not in ("http", "https") or not urlsplit(self.url).hostname:
            raise ConfigError(f"webhook URL {redact(self.url)} must be http(s)://host/...")
        if self.style not in ("json", "slack"):
            raise ConfigError(f"webhook style {self.style!r} must be json or slack")
        if self.attempts < 1 or self.backoff_s < 0:
            raise ConfigError("webhook attempts must be >= 1 and backoff >= 0")

    def body(self, event: dict[str, Any]) -> bytes:
        """The request body of `event` (keys: run, kind, time_s, message, payload) in this style."""
        when = datetime.fromtimestamp(float(event["time_s"]), UTC).isoformat()
        if self.style == "slack":
            text = f":warning: wattlog: {event['kind']} in run {event['run']} at {when}"
            if event.get("message"):
                text += f": {event['message']}"
            return json.dumps({"text": text}).encode()
        return json.dumps({"source": "wattlog", **event, "time": when}, sort_keys=True, default=str).encode()

    def send(self, event: dict[str, Any]) -> int:
        """Post one event; returns the HTTP status.

        Raises:
            WattlogError: Refused (4xx other than 429) at once, or still failing after `attempts` tries.
        """
        body = self.body(event)
        headers = {"Content-Type": "application/json", "User-Agent": "wattlog"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.secret:
            headers[SIGNATURE_HEADER] = sign(self.secret, body)
        where, last = redact(self.url), ""
        for attempt in range(1, self.attempts + 1):
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")  # noqa: S310 - the webhook URL, checked http(s) when the Notifier is made
            try:
                with self.opener(request, timeout=self.timeout_s) as response:
                    return int(response.status)
            except urllib.error.HTTPError as error:
                if error.code != 429 and error.code < 500:
                    raise WattlogError(
                        f"webhook {where} refused the event ({error.code}): check its URL and credentials"
                    ) from None
                last = f"HTTP {error.code}"
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                last = type(getattr(error, "reason", error)).__name__
            if attempt < self.attempts:
                delay = self.backoff_s * 2 ** (attempt - 1)
                log.warning(
                    "webhook %s failed (%s), try %d of %d in %.1f s",
                    where,
                    last,
                    attempt + 1,
                    self.attempts,
                    delay,
                )
                self.sleep(delay)
        raise WattlogError(
            f"webhook {where} unreachable after {self.attempts} tries ({last}): check the URL or try later"
        )


def events_to_send(events: list[Any], run: str, kinds: tuple[str, ...] = INSTABILITY_KINDS) -> list[dict]:
    """The ledger events worth notifying: instabilities of `kinds`, failed health checks and lost runs.

    Args:
        events: Ledger Event rows (kind, time_s, step, payload).
        run: The run's name, put in every notification.
        kinds: Instability kinds to send.
    """
    out = []
    for e in events:
        failed_check = e.kind == EventKind.HEALTH_CHECK and e.payload.get("ok") is False
        if e.kind in kinds or failed_check or e.kind == EventKind.LOST:  # lost: its agent died unseen
            message = e.payload.get("message") or e.payload.get("reason") or ""
            out.append(
                {
                    "run": run,
                    "kind": e.kind,
                    "time_s": e.time_s,
                    "step": e.step,
                    "message": message,
                    "payload": dict(e.payload),
                }
            )
    return out


def detection_hook(
    notifier: Notifier, run: str, clock: Callable[[], float] = time.time
) -> Callable[[Any], None]:
    """A Tracker hook (``tracker.add_hook(...)``) that sends each detection to `notifier`.

    Sending runs in a short-lived daemon thread, so retries never hold up the tracker's
    bookkeeping; a delivery that still fails is logged (URL redacted) and dropped.

    Args:
        notifier: Where to send.
        run: The run's name, put in every notification.
        clock: Wall clock for the event time.
    """

    def send_logged(event: dict[str, Any]) -> None:
        try:
            notifier.send(event)
        except WattlogError as error:
            log.warning("event %s of run %s not delivered: %s", event["kind"], run, error)

    def hook(detection: Any) -> None:
        event = {
            "run": run,
            "kind": detection.kind,
            "time_s": clock(),
            "step": detection.step,
            "message": detection.message,
            "payload": {"value": detection.value, "threshold": detection.threshold},
        }
        threading.Thread(target=send_logged, args=(event,), name="wattlog-notify", daemon=True).start()

    return hook
