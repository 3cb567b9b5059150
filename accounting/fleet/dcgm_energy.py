"""Energy of a time range from NVIDIA's dcgm-exporter, for clusters that already scrape it.

dcgm-exporter publishes `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`, each GPU's energy
counter in millijoules since the driver loaded, labelled `Hostname`, `gpu` (index)
and `UUID` (and `hpc_job` with its HPC job mapping). `increase()` over the range
handles the counter's resets (a driver reload, a node reboot) and is divided by
1000 for joules. The figure is labelled `counter (dcgm-exporter)`: a hardware
counter, read by someone else's exporter at its own scrape interval; its band is
the gain range of the board's sensor profile (telemetry/sensors/nvidia.toml, by
dcgm-exporter's `modelName` label; SC24: -9.5 % to +6.4 %), applied as for
wattlog's own counters: a reading is gain x truth, so truth lies in
[E / (1 + gain_high), E / (1 + gain_low)].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from wattlog.accounting.carbon.intensity import IntensitySource, timestamp_s
from wattlog.accounting.carbon.intensity.live.client import hours_between
from wattlog.accounting.carbon.intensity.registry import by_name
from wattlog.accounting.carbon.sites import Site
from wattlog.accounting.ledger.engine import make_engine
from wattlog.accounting.ledger.run_energy import energy_from_devices
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.accounting.publishing.footprint import CarbonPath, WaterConvention, footprint_for
from wattlog.accounting.publishing.prometheus_energy import PrometheusQuery, window_of
from wattlog.accounting.publishing.render import TableRow
from wattlog.accounting.units import HOUR_S
from wattlog.errors import ConfigError
from wattlog.http_exchange import open_url
from wattlog.records import Kind
from wattlog.telemetry.job import expand_nodelist
from wattlog.telemetry.sensors.profiles import load_table

DCGM_ENERGY_METRIC = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
DCGM_SOURCE = "counter (dcgm-exporter)"
DCGM_PROFILES = "nvidia.toml"
"""The sensor profiles of the boards dcgm-exporter reads (it reads NVIDIA GPUs only)."""
JOB_LABEL = "hpc_job"
"""Label dcgm-exporter's HPC job mapping (--hpc-job-mapping-dir) adds: the SLURM job id."""


def dcgm_energy(
    url: str,
    start_s: float,
    end_s: float,
    *,
    hosts: Sequence[str] = (),
    gpus: Sequence[str] = (),
    job: str | None = None,
    timeout_s: float = 10.0,
    opener: Callable[..., Any] = open_url,
) -> list[EnergyTotal]:
    """Per-GPU energy over [start_s, end_s] from dcgm-exporter's counter in the Prometheus at `url`.

    Args:
        url: Prometheus base URL.
        start_s: Start of the range, Unix seconds.
        end_s: End of the range, Unix seconds (> start_s).
        hosts: Only these `Hostname`s (a SLURM job's nodes); empty = all.
        gpus: Only these GPU indices or UUIDs (the job's GPUs); empty = all.
        job: Only series of this HPC job (dcgm-exporter's `hpc_job` label).
        timeout_s: HTTP timeout per request.
        opener: urlopen-compatible function (injected by tests).

    Returns:
        One row per GPU (host, UUID or index), kind gpu, source ``counter (dcgm-exporter)``, sorted.

    Raises:
        ConfigError: An empty or inverted range, or a host/GPU name Prometheus could not match literally.
        PrometheusError: Prometheus unreachable or answering an error.
    """
    promql = DcgmSelection(tuple(hosts), tuple(gpus), job).increase(
        window_of(start_s, end_s, "the time range")
    )
    profiles = load_table(DCGM_PROFILES)
    rows = []
    for sample in PrometheusQuery(url, timeout_s, opener).vector(promql, end_s):
        labels = sample["metric"]
        energy_j = float(sample["value"][1])
        device = labels.get("UUID") or f"gpu{labels.get('gpu', '?')}"
        low_f, high_f = profiles.for_board(labels.get("modelName", "")).gain_factors()
        rows.append(
            EnergyTotal.of(
                host=labels.get("Hostname", ""),
                device=device,
                kind=Kind.GPU.value,
                source=DCGM_SOURCE,
                energy_j=energy_j,
                low_j=energy_j * low_f,
                high_j=energy_j * high_f,
            )
        )
    return sorted(rows, key=lambda r: (r.host, r.device))


@dataclass(frozen=True, slots=True)
class DcgmSelection:
    """Which of dcgm-exporter's GPUs to sum: by host, by GPU index or UUID, by HPC job; empty = all."""

    hosts: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    job: str | None = None

    def increase(self, window_s: int) -> str:
        """PromQL for each selected GPU's counter increase over the last `window_s` seconds, in joules."""
        matchers = []
        for label, values in (("Hostname", self.hosts), ("gpu", [g for g in self.gpus if g.isdigit()])):
            if values:
                matchers.append(f'{label}=~"{_alternatives(values)}"')
        uuids = [g for g in self.gpus if not g.isdigit()]
        if uuids:
            matchers.append(f'UUID=~"{_alternatives(uuids)}"')
        if self.job:
            matchers.append(f'{JOB_LABEL}="{_literal(self.job)}"')
        selector = "{" + ", ".join(matchers) + "}" if matchers else ""
        increase = f"increase({DCGM_ENERGY_METRIC}{selector}[{window_s}s])"
        return f"sum by (Hostname, gpu, UUID, modelName) ({increase}) / 1000"


def _literal(value: str) -> str:
    if not value or any(c in value for c in '"\\{}\n'):
        raise ConfigError(f"{value!r} cannot be matched literally in PromQL: give a plain name")
    return value


def _alternatives(values: Sequence[str]) -> str:
    """A regex matching exactly these values (regex characters escaped)."""
    specials = set(".^$*+?()[]|")
    escaped = ["".join("\\\\" + c if c in specials else c for c in _literal(v)) for v in values]
    return "|".join(escaped)


def dcgm_hours(ask: PrometheusQuery, chosen: DcgmSelection, start_s: float, end_s: float) -> dict[int, float]:
    """The chosen GPUs' energy in each clock hour of [start_s, end_s], joules (one query per hour).

    An hourly intensity weighs each hour's energy, as the ledger's rows are split
    (:func:`~wattlog.accounting.carbon.intensity.hours.split_by_hour_mwh`): the same CO2 path.
    """
    by_hour: dict[int, float] = {}
    for hour in hours_between(start_s, end_s):
        a, b = max(start_s, hour), min(end_s, hour + HOUR_S)
        if b > a:
            samples = ask.vector(chosen.increase(window_of(a, b, "an hour")), b)
            by_hour[hour] = sum(float(sample["value"][1]) for sample in samples)
    return by_hour


def dcgm_row(
    url: str,
    start: str,
    end: str,
    site: Site,
    *,
    hosts: str = "",
    gpus: str = "",
    job: str | None = None,
    intensity: IntensitySource | None = None,
    convention: WaterConvention = WaterConvention.PAPER,
    ledger: Ledger | None = None,
    opener: Callable[..., Any] = open_url,
) -> TableRow:
    """The Table-19 row of a time range (or a SLURM job's nodes and GPUs) measured by dcgm-exporter.

    Args:
        url: Prometheus base URL.
        start: Start, ISO 8601 (UTC unless it names a zone) or Unix seconds.
        end: End, likewise.
        site: Where the energy was drawn (PUE, WUE, intensity).
        hosts: SLURM node list (``node[01-04]``) or comma-separated host names; "" = all.
        gpus: Comma-separated GPU indices or UUIDs; "" = all.
        job: HPC job id (dcgm-exporter's ``hpc_job`` label).
        intensity: Overrides the site's intensity (e.g. an hourly series).
        convention: Water convention.
        ledger: Where a site's stored or fetched hours are read (a provider's cache).
        opener: urlopen-compatible function (injected by tests).

    Raises:
        ConfigError: A bad time, range or node list, or no GPU energy in the range.
        PrometheusError: Prometheus unreachable or answering an error.
    """
    try:
        start_s, end_s = timestamp_s(start), timestamp_s(end)
    except ValueError as error:
        raise ConfigError(f"{error}: give --start and --end as ISO 8601 or Unix seconds") from None
    gpu_ids = tuple(g.strip() for g in gpus.split(",") if g.strip())
    chosen = DcgmSelection(tuple(expand_nodelist(hosts)) if hosts else (), gpu_ids, job)
    rows = dcgm_energy(url, start_s, end_s, hosts=chosen.hosts, gpus=gpu_ids, job=job, opener=opener)
    carbon = CarbonPath.of(site, intensity, ledger)  # the tables' path: hourly where the site's series is
    by_hour = None
    if carbon.hourly and rows:
        by_hour = dcgm_hours(PrometheusQuery(url, opener=opener), chosen, start_s, end_s)
        total, hourly_sum = sum(r.energy_j for r in rows), sum(by_hour.values())
        if hourly_sum > 0:  # the hours' increases scaled to the range's: the row's energy and CO2 agree
            by_hour = {h: j * total / hourly_sum for h, j in by_hour.items()}
    energy = energy_from_devices(rows, by_hour)
    if energy is None:
        raise ConfigError(
            f"no {DCGM_ENERGY_METRIC} series in {url} for that range and selection: "
            "is dcgm-exporter scraped, and do --hosts/--gpus/--slurm-job match its labels?"
        )
    scope = f"job {job}" if job else (hosts or "all hosts")
    label = f"{scope}, {len(rows)} GPUs, {start} to {end}"
    hosts_seen = sorted({r.host for r in rows})
    notes = (f"GPU energy only, from dcgm-exporter on {', '.join(hosts_seen)}; CPU and DRAM not included",)
    return TableRow.from_footprint(
        label, footprint_for(energy, site, intensity=carbon.intensity, convention=convention), notes=notes
    )


def dcgm_row_at(db: str | None, url: str, start: str, end: str, site: Site, **options: Any) -> TableRow:
    """:func:`dcgm_row`, reading the ledger at `db` when the site's hours are kept there.

    A site naming a stored series or a live provider takes its hours from the ledger (a
    provider's cache, fetched by `wattlog intensity fetch`), as the ledger's tables do.
    """
    ref = site.intensity_source
    if options.get("intensity") is not None or not (ref.source == "ledger" or by_name(ref.source).fetches):
        return dcgm_row(url, start, end, site, **options)
    engine = make_engine(db, create=False)
    try:
        return dcgm_row(url, start, end, site, ledger=Ledger(engine), **options)
    finally:
        engine.dispose()
