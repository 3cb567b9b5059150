"""Energy of a run from Prometheus' `wattlog_energy_joules_total` counters over the run's interval.

The queries go through the HTTP API (/api/v1/query) evaluated at the run's
end, with a range that covers the run. `energy_counted` (what `wattlog table
--prometheus` uses) takes what the counters counted: each counter's last value
minus its value at the start, restarts summed from the raw samples, so it
agrees with the ledger to the last scrape. `energy_from_prometheus` with
`increase()` extrapolates to the window's edges and can differ by up to a
scrape interval's energy at each end (-4.5..+2.5 % per host measured on a
64-node run). The ledger stays the record; this is the cross-check.
"""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.errors import ConfigError, WattlogError
from wattlog.http_body import read_body
from wattlog.http_exchange import open_url
from wattlog.metric_names import MetricName
from wattlog.untrusted import loads_json

ENERGY_METRIC = MetricName.ENERGY_JOULES_TOTAL
BAND_METRIC = MetricName.ENERGY_UNCERTAINTY_JOULES
LABELS = ("host", "device", "kind", "source")
# How far before a run's start a counter's last sample still counts as its value at the start: Prometheus'
# own staleness window (a series absent that long had stopped, so its counter restarted from 0 in the run).
START_LOOKBACK_S = 300


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
    opener: Callable[..., Any] = open_url,
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
    return _rows({_key(s["metric"]): float(s["value"][1]) for s in energy}, ratio)


def energy_counted(
    url: str,
    start_s: float,
    end_s: float,
    *,
    matchers: Mapping[str, str] | None = None,
    settle_s: float = 0.0,
    timeout_s: float = 10.0,
    opener: Callable[..., Any] = open_url,
) -> list[EnergyTotal]:
    """Per-device energy the counters counted over [start_s, end_s], without extrapolation.

    Each series' value at the end minus its value at `start_s`, both interpolated between the
    scrapes around them (none within `START_LOOKBACK_S` before the start: counted from 0). A
    series whose counter reset (its agent restarted) is summed from its raw samples, each
    segment from 0. Bands as in `energy_from_prometheus`.

    Args:
        url: Prometheus base URL, e.g. http://127.0.0.1:9090.
        start_s: Start of the run, Unix seconds.
        end_s: End of the run, Unix seconds (> start_s).
        matchers: Exact label matchers to restrict the series, e.g. {"run": "olmo-final"}.
        settle_s: Seconds after `end_s` whose samples still count: for series that stop counting at
            the run's end (a job's agents, selected by their `run` label), whose final value is
            scraped after it; 0 for a host's agent that counts on after the run.
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
    end_s += settle_s
    window_s = max(1, math.ceil(end_s - start_s))
    by = ", ".join(LABELS)

    def summed(promql: str, at_s: float) -> dict[tuple[str, ...], float]:
        found = query_vector(url, f"sum by ({by}) ({promql})", at_s, timeout_s, opener)
        return {_key(s["metric"]): float(s["value"][1]) for s in found}

    last = summed(f"last_over_time({ENERGY_METRIC}{selector}[{window_s}s])", end_s)
    if not settle_s:  # counters that count on after the run: their value at its end, between scrapes
        last.update(_values_at(url, selector, end_s, timeout_s, opener))
    base = summed(f"last_over_time({ENERGY_METRIC}{selector}[{START_LOOKBACK_S}s])", start_s)
    if base:  # counters already running at the start: their value then, between scrapes
        base = _values_at(url, selector, start_s, timeout_s, opener)
    resets = summed(f"resets({ENERGY_METRIC}{selector}[{window_s}s])", end_s)
    values = {key: value - base.get(key, 0.0) for key, value in last.items()}
    if any(count > 0 for count in resets.values()):
        raw = query_matrix(url, f"{ENERGY_METRIC}{selector}[{window_s}s]", end_s, timeout_s, opener)
        values.update(_restarted(raw, {key for key, count in resets.items() if count > 0}, base))
    ratio = _band_ratios(url, selector, matchers or {}, window_s, end_s, timeout_s, opener)
    return _rows(values, ratio)


def _restarted(
    raw: list[dict[str, Any]], keys: set[tuple[str, ...]], base: Mapping[tuple[str, ...], float]
) -> dict[tuple[str, ...], float]:
    """What the series of `keys` counted, from their raw samples (the first series from its base)."""
    counted: dict[tuple[str, ...], float] = {}
    for series in raw:
        key = _key(series["metric"])
        if key in keys:
            start = 0.0 if key in counted else base.get(key, 0.0)
            counted[key] = counted.get(key, 0.0) + _counted(series["values"], start)
    return counted


def _values_at(
    url: str, selector: str, at_s: float, timeout_s: float, opener: Callable[..., Any]
) -> dict[tuple[str, ...], float]:
    """Each key's counters at `at_s`, from the raw samples within `START_LOOKBACK_S` around it."""
    around = f"{ENERGY_METRIC}{selector}[{2 * START_LOOKBACK_S}s]"
    values: dict[tuple[str, ...], float] = {}
    for series in query_matrix(url, around, at_s + START_LOOKBACK_S, timeout_s, opener):
        key = _key(series["metric"])
        values[key] = values.get(key, 0.0) + _value_at(series["values"], at_s)
    return values


def _value_at(samples: list[list[Any]], at_s: float) -> float:
    """A counter's value at `at_s`, linear between the samples around it (0 before its first)."""
    before = [(float(t), float(v)) for t, v in samples if float(t) <= at_s]
    after = [(float(t), float(v)) for t, v in samples if float(t) > at_s]
    if not before:
        return 0.0
    (t0, v0), (t1, v1) = before[-1], after[0] if after else before[-1]
    return v0 if t1 == t0 or v1 < v0 else v0 + (v1 - v0) * (at_s - t0) / (t1 - t0)


def _counted(samples: list[list[Any]], base: float) -> float:
    """What a counter's raw samples counted from `base`: increases summed, a drop (reset) counted from 0."""
    total, previous = 0.0, base
    for _, text in samples:
        value = float(text)
        total += value - previous if value >= previous else value
        previous = value
    return total


def _rows(
    values: Mapping[tuple[str, ...], float], ratio: Mapping[tuple[str, ...], dict[str, float]]
) -> list[EnergyTotal]:
    """EnergyTotal rows of per-key values, each band scaled by its series' low/high ratios."""
    rows = []
    for key, value in values.items():
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


def query_vector(
    url: str, promql: str, at_s: float, timeout_s: float, opener: Callable[..., Any]
) -> list[dict[str, Any]]:
    """The samples of an instant query evaluated at `at_s` (Unix s).

    Raises:
        PrometheusError: Unreachable server or an error answer (one line, naming the URL).
    """
    return _query(url, promql, at_s, timeout_s, opener, "vector")


def query_matrix(
    url: str, promql: str, at_s: float, timeout_s: float, opener: Callable[..., Any]
) -> list[dict[str, Any]]:
    """The raw samples (`values`: [[t, "v"], ...] per series) of a range selector evaluated at `at_s`.

    Raises:
        PrometheusError: Unreachable server or an error answer (one line, naming the URL).
    """
    return _query(url, promql, at_s, timeout_s, opener, "matrix")


def _query(
    url: str, promql: str, at_s: float, timeout_s: float, opener: Callable[..., Any], result_type: str
) -> list[dict[str, Any]]:
    endpoint = (
        url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": promql, "time": f"{at_s:.3f}"})
    )
    try:
        deadline = time.monotonic() + timeout_s  # the whole answer, not each read (wattlog/http_body.py)
        with opener(endpoint, timeout=timeout_s) as response:
            body = loads_json(read_body(response, deadline=deadline, source=f"Prometheus at {url}"))
    except urllib.error.HTTPError as error:
        try:
            detail = json.loads(error.read().decode("utf-8")).get("error", error.reason)
        except (ValueError, AttributeError):
            detail = error.reason
        raise PrometheusError(f"Prometheus at {url} refused the query ({error.code}): {detail}") from error
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise PrometheusError(f"cannot reach Prometheus at {url}: {reason} (check --prometheus)") from error
    if body.get("status") != "success" or body.get("data", {}).get("resultType") != result_type:
        raise PrometheusError(
            f"Prometheus at {url} answered an error: {body.get('error', body.get('status'))}"
        )
    return list(body["data"]["result"])
