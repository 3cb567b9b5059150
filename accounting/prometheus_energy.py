"""Energy of a run from Prometheus: `increase(wattlog_energy_joules_total[...])` over the run's interval.

The query goes through the HTTP API (/api/v1/query) evaluated at the run's
end, with a range that covers the run. `increase()` handles counter resets
(agent restarts) and extrapolates to the window's edges, so it can differ
from the ledger by up to a scrape interval's energy at each end: the ledger
stays the record; this is the cross-check.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.errors import ConfigError, WattlogError
from wattlog.metric_names import MetricName

ENERGY_METRIC = MetricName.ENERGY_JOULES_TOTAL
BAND_METRIC = MetricName.ENERGY_UNCERTAINTY_JOULES
LABELS = ("host", "device", "kind", "source")


class PrometheusError(WattlogError):
    """Prometheus could not be reached or answered with an error."""


def energy_from_prometheus(
    url: str,
    start_s: float,
    end_s: float,
    *,
    matchers: Mapping[str, str] | None = None,
    since_start: bool = False,
    timeout_s: float = 10.0,
    opener: Callable[..., Any] = urllib.request.urlopen,
) -> list[EnergyTotal]:
    """Per-device energy over [start_s, end_s] (Unix seconds) from the Prometheus at `url`.

    The band scales the increase by each device's latest low/energy and
    high/energy ratios (the agent's cumulative band); without a band the
    figure is its own band.

    Args:
        url: Prometheus base URL, e.g. http://127.0.0.1:9090.
        start_s: Start of the run, Unix seconds.
        end_s: End of the run, Unix seconds (> start_s).
        matchers: Exact label matchers to restrict the series, e.g. {"host": "node0"}.
        since_start: Take each counter's last value in the window (`max_over_time`) instead of
            `increase()`: the energy since each agent started, exact to the last scrape when every
            agent started inside the window and none restarted (a job's node agents).
        timeout_s: HTTP timeout per request, seconds.
        opener: urlopen-compatible function (injected by tests).

    Returns:
        One row per (host, device, kind, source), sorted.

    Raises:
        ConfigError: An empty or inverted window, or a bad label name.
        PrometheusError: Unreachable server or an error answer (one line, naming the URL).
    """
    if not end_s > start_s:
        raise ConfigError(f"the Prometheus window must end after it starts ({start_s} >= {end_s})")
    selector = _selector(matchers or {})
    window_s = max(1, math.ceil(end_s - start_s))
    by = ", ".join(LABELS)
    over = "max_over_time" if since_start else "increase"
    energy = query_vector(
        url, f"sum by ({by}) ({over}({ENERGY_METRIC}{selector}[{window_s}s]))", end_s, timeout_s, opener
    )
    ratio = _band_ratios(url, selector, matchers or {}, window_s, end_s, timeout_s, opener)
    rows = []
    for sample in energy:
        key = _key(sample["metric"])
        value = float(sample["value"][1])
        low = value * ratio.get(key, {}).get("low", 1.0)
        high = value * ratio.get(key, {}).get("high", 1.0)
        host, device, kind, source = key
        rows.append(EnergyTotal.of(host, device, kind, source, value, min(low, value), max(high, value)))
    return sorted(rows, key=lambda r: (r.host, r.kind, r.device, r.source))


def _band_ratios(
    url: str,
    selector: str,
    matchers: Mapping[str, str],
    window_s: int,
    end_s: float,
    timeout_s: float,
    opener: Callable[..., Any],
) -> dict[tuple[str, ...], dict[str, float]]:
    """Each series' latest low/energy and high/energy ratios ("low", "high"): the agent's cumulative band."""
    by = ", ".join(LABELS)
    # last_over_time, not the instant value: once a job's agents have exited, their series are stale.
    last = f"last_over_time({ENERGY_METRIC}{selector}[{window_s}s])"
    totals = query_vector(url, f"sum by ({by}) ({last})", end_s, timeout_s, opener)
    band_selector = _selector({**matchers}, extra='bound=~"low|high"')
    band_last = f"last_over_time({BAND_METRIC}{band_selector}[{window_s}s])"
    bands = query_vector(url, f"sum by ({by}, bound) ({band_last})", end_s, timeout_s, opener)
    total_of = {_key(s["metric"]): float(s["value"][1]) for s in totals}
    ratio: dict[tuple[str, ...], dict[str, float]] = {}
    for sample in bands:
        key = _key(sample["metric"])
        if total_of.get(key, 0.0) > 0:
            ratio.setdefault(key, {})[sample["metric"].get("bound", "")] = (
                float(sample["value"][1]) / total_of[key]
            )
    return ratio


def _selector(matchers: Mapping[str, str], extra: str = "") -> str:
    parts = []
    for name, value in sorted(matchers.items()):
        if not name.isidentifier():
            raise ConfigError(f"bad Prometheus label name {name!r}")
        parts.append(f"{name}={json.dumps(value)}")
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _key(metric: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(metric.get(label, "") for label in LABELS)


def query_vector(  # type: ignore[type-arg]
    url: str, promql: str, at_s: float, timeout_s: float, opener: Callable[..., Any]
) -> list[dict]:
    """The samples of an instant query evaluated at `at_s` (Unix s).

    Raises:
        PrometheusError: Unreachable server or an error answer (one line, naming the URL).
    """
    endpoint = (
        url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": promql, "time": f"{at_s:.3f}"})
    )
    try:
        with opener(endpoint, timeout=timeout_s) as response:
            body = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        try:
            detail = json.loads(error.read().decode("utf-8")).get("error", error.reason)
        except (ValueError, AttributeError):
            detail = error.reason
        raise PrometheusError(f"Prometheus at {url} refused the query ({error.code}): {detail}") from error
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise PrometheusError(f"cannot reach Prometheus at {url}: {reason} (check --prometheus)") from error
    if body.get("status") != "success" or body.get("data", {}).get("resultType") != "vector":
        raise PrometheusError(
            f"Prometheus at {url} answered an error: {body.get('error', body.get('status'))}"
        )
    return list(body["data"]["result"])
