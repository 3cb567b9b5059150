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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
    window_s = window_of(start_s, end_s, "the Prometheus window")
    ask, selector = PrometheusQuery(url, timeout_s, opener), _selector(matchers or {})
    over = "max_over_time" if since_start else "increase"
    energy = ask.summed(f"{over}({ENERGY_METRIC}{selector}[{window_s}s])", end_s)
    return _rows(energy, _band_ratios(ask, matchers or {}, window_s, end_s))


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
    window_of(start_s, end_s, "the Prometheus window")  # the run's own must not be empty
    window_s = window_of(start_s, end_s + settle_s, "the Prometheus window")
    ask, selector = PrometheusQuery(url, timeout_s, opener), _selector(matchers or {})
    end_s += settle_s
    last = ask.summed(f"last_over_time({ENERGY_METRIC}{selector}[{window_s}s])", end_s)
    if not settle_s:  # counters that count on after the run: their value at its end, between scrapes
        last.update(_values_at(ask, selector, end_s))
    base = ask.summed(f"last_over_time({ENERGY_METRIC}{selector}[{START_LOOKBACK_S}s])", start_s)
    if base:  # counters already running at the start: their value then, between scrapes
        base = _values_at(ask, selector, start_s)
    resets = ask.summed(f"resets({ENERGY_METRIC}{selector}[{window_s}s])", end_s)
    values = {key: value - base.get(key, 0.0) for key, value in last.items()}
    if any(count > 0 for count in resets.values()):
        raw = ask.matrix(f"{ENERGY_METRIC}{selector}[{window_s}s]", end_s)
        values.update(_restarted(raw, {key for key, count in resets.items() if count > 0}, base))
    return _rows(values, _band_ratios(ask, matchers or {}, window_s, end_s))


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


def _values_at(ask: PrometheusQuery, selector: str, at_s: float) -> dict[tuple[str, ...], float]:
    """Each key's counters at `at_s`, from the raw samples within `START_LOOKBACK_S` around it."""
    around = f"{ENERGY_METRIC}{selector}[{2 * START_LOOKBACK_S}s]"
    values: dict[tuple[str, ...], float] = {}
    for series in ask.matrix(around, at_s + START_LOOKBACK_S):
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
    ask: PrometheusQuery, matchers: Mapping[str, str], window_s: int, end_s: float
) -> dict[tuple[str, ...], dict[str, float]]:
    """Each series' latest low/energy and high/energy ratios ("low", "high"): the agent's cumulative band."""
    # last_over_time, not the instant value: once a job's agents have exited, their series are stale.
    total_of = ask.summed(f"last_over_time({ENERGY_METRIC}{_selector(matchers)}[{window_s}s])", end_s)
    band_selector = _selector(matchers, extra='bound=~"low|high"')
    band_last = f"last_over_time({BAND_METRIC}{band_selector}[{window_s}s])"
    ratio: dict[tuple[str, ...], dict[str, float]] = {}
    for (*labels, bound), band_j in ask.summed(band_last, end_s, by=(*LABELS, "bound")).items():
        key = tuple(labels)
        if total_of.get(key, 0.0) > 0:
            ratio.setdefault(key, {})[bound] = band_j / total_of[key]
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


def window_of(start_s: float, end_s: float, what: str) -> int:
    """The whole seconds a range selector needs to cover [start_s, end_s] (at least 1).

    Raises:
        ConfigError: An empty or inverted window (`what` names it).
    """
    if not end_s > start_s:
        raise ConfigError(f"{what} must end after it starts ({start_s} >= {end_s})")
    return max(1, math.ceil(end_s - start_s))


@dataclass(frozen=True, slots=True)
class PrometheusQuery:
    """How the readers of energy counters ask one Prometheus (its HTTP API at `url`).

    Attributes:
        url: Prometheus base URL, e.g. http://127.0.0.1:9090.
        timeout_s: HTTP timeout per request, seconds.
        opener: urlopen-compatible function (injected by tests).

    Each query raises PrometheusError (one line, naming the URL) when the server cannot be
    reached or answers an error.
    """

    url: str
    timeout_s: float = 10.0
    opener: Callable[..., Any] = open_url

    def vector(self, promql: str, at_s: float) -> list[dict[str, Any]]:
        """The samples of an instant query evaluated at `at_s` (Unix s)."""
        return _query(self.url, promql, at_s, self.timeout_s, self.opener, "vector")

    def matrix(self, promql: str, at_s: float) -> list[dict[str, Any]]:
        """The raw samples (`values`: [[t, "v"], ...] per series) of a range selector evaluated at `at_s`."""
        return _query(self.url, promql, at_s, self.timeout_s, self.opener, "matrix")

    def summed(self, promql: str, at_s: float, by: Sequence[str] = LABELS) -> dict[tuple[str, ...], float]:
        """`sum by (<by>) (<promql>)` at `at_s`: each group's value, keyed by its labels' values."""
        found = self.vector(f"sum by ({', '.join(by)}) ({promql})", at_s)
        return {tuple(s["metric"].get(label, "") for label in by): float(s["value"][1]) for s in found}


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
