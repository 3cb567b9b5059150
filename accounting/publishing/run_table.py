"""Table-19 rows of recorded runs: ledger (or Prometheus) energy -> footprint -> TableRow.

A run's row uses the site it was recorded with (or `site` when given); a project's
rows (final runs, subtotals, the whole development) are accounting.publishing.project_rows'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from wattlog.accounting.carbon.intensity import IntensitySource
from wattlog.accounting.carbon.run_sites import CATALOG_NOTE, run_site
from wattlog.accounting.carbon.sites import Site, get_site
from wattlog.accounting.devices import Overhead
from wattlog.accounting.it_energy import Energy, energy_label
from wattlog.accounting.ledger.models import Status
from wattlog.accounting.ledger.run_energy import read_energy
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import EnergyTotal, EventInfo, JobNodes, RankInfo, RunInfo
from wattlog.accounting.publishing.extrapolate import job_energy
from wattlog.accounting.publishing.footprint import CarbonPath, Footprint, WaterConvention, footprint_for
from wattlog.accounting.publishing.gaps import GapSummary, gaps_of, with_gaps
from wattlog.accounting.publishing.job_speed import efficiency_of
from wattlog.accounting.publishing.node_boundary import node_boundary
from wattlog.accounting.publishing.prometheus_energy import START_LOOKBACK_S, energy_counted
from wattlog.accounting.publishing.render import TableRow
from wattlog.accounting.publishing.validity import RunEvidence, Validity, ValidityLimits, run_validity
from wattlog.accounting.ranges import midpoint
from wattlog.errors import ConfigError
from wattlog.records import EnergyFigure, Kind, Source


@dataclass(frozen=True, slots=True)
class TableOptions:
    """How runs become rows.

    Attributes:
        catalog: Sites by name (built-in plus the user's file).
        site: Use this site for every run instead of the one it was recorded with.
        intensity: Carbon intensity overriding the site's (e.g. an hourly series).
        convention: Water convention.
        prometheus_url: Take energy from this Prometheus instead of the ledger.
        now_s: Wall clock, for the end of runs still running (Prometheus only).
        overhead: Multiply GPU energy by this for the rest of the server, on runs that measured
            only GPUs (measured CPU/DRAM energy is preferred where it exists).
        calibrations: Site -> its measured multiplier (accounting.fleet.calibration), used instead of
            `overhead` for that site's runs that measured only GPUs (the constant stays the fallback).
        validity: Gate each run with these limits and mark an invalid one "NOT VALID: ..." in its
            notes: on by default, so no path publishes a row ungated (None: no gate, unless `strict`).
        strict: Refuse a run the gate finds invalid (ConfigError naming its reasons).
    """

    catalog: Mapping[str, Site]
    site: str | None = None
    intensity: IntensitySource | None = None
    convention: WaterConvention = WaterConvention.PAPER
    prometheus_url: str | None = None
    now_s: Callable[[], float] = field(default=time.time)
    overhead: Overhead | None = None
    calibrations: Mapping[str, Overhead] = field(default_factory=dict)
    validity: ValidityLimits | None = field(default_factory=ValidityLimits)
    strict: bool = False


SITELESS_NOTE = (
    "recorded without a site, so no footprint: pass --site NAME (see `wattlog sites`) for its CO2 and "
    "water; its energy is shown as measured"
)
"""The note a site-less run's row carries instead of failing the whole table (its energy still shows)."""


def has_site(run: RunInfo, options: TableOptions) -> bool:
    """Whether a site is known for the run (recorded, or given for every run)."""
    return bool(options.site or run.site)


@dataclass(frozen=True, slots=True)
class RunRead:
    """What a run's row needs from the ledger, read in one transaction.

    Attributes:
        totals: Its per-device energy totals.
        nodes: The nodes of its job.
        energy: Its IT energy from the ledger (None: none recorded, or the energy comes from Prometheus).
        gaps: Its gaps (None where not read).
        spans: (host, device) -> its rows' first start and last end (read for the validity gate).
        events: Its events (read for the validity gate).
        ranks: Every rank's latest progress (tokens, FLOPs per token).
        span: First start and last end of its energy rows (None: no rows).
    """

    totals: list[EnergyTotal]
    nodes: JobNodes
    energy: Energy | None
    gaps: GapSummary | None
    spans: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    events: list[EventInfo] = field(default_factory=list)
    ranks: list[RankInfo] = field(default_factory=list)
    span: tuple[float, float] | None = None

    def gpu_seconds(self) -> float:
        """GPU-seconds measured: the GPUs x the run's span, less those GPUs' gaps.

        Read from the span's two indexed ends, not a sum over every row (a month of 1,024 GPUs
        is 737,280 rows); a GPU that joined late counts from the run's start, so the mean
        power reads low, never high.
        """
        gpus = {(t.host, t.device) for t in self.totals if t.figure.kind == Kind.GPU}
        if self.span is None or not gpus:
            return 0.0
        gaps = self.gaps.gaps if self.gaps is not None else ()
        # only the part of a gap inside the span held GPU-seconds: a killed run's lease gap starts at
        # its last row, and taking it away read 227 % of TDP (issue 38); overlapping gaps count once
        missed = sum(
            seconds_inside([(g.start_s, g.end_s) for g in gaps if (g.host, g.device) == gpu], self.span)
            for gpu in gpus
        )
        return max(0.0, len(gpus) * (self.span[1] - self.span[0]) - missed)


def seconds_inside(intervals: Sequence[tuple[float, float]], span: tuple[float, float]) -> float:
    """Seconds of `span` that the union of `intervals` covers (each clipped to it, overlaps once)."""
    covered, reached = 0.0, span[0]
    for start_s, end_s in sorted(intervals):
        start_s, end_s = max(start_s, reached), min(end_s, span[1])
        if end_s > start_s:
            covered += end_s - start_s
            reached = end_s
    return covered


def carbon_path(ledger: Ledger, run: RunInfo, options: TableOptions) -> tuple[Site, CarbonPath]:
    """The run's site and CO2 path: the intensity the site names, unless `options.intensity` overrides it.

    Raises:
        ConfigError: The run has no site and none was given, or its intensity cannot be opened.
    """
    site_name = options.site or run.site
    if not site_name:
        raise ConfigError(
            f"run {run.name!r} was recorded without a site: pass --site NAME (see `wattlog sites`)"
        )
    # the figures the run stored at its start (its own site named again included: an audit bundle):
    # a later catalog edit changes no stored run; another site is the catalog's
    other = options.site is not None and options.site != run.site
    site = get_site(site_name, options.catalog) if other else run_site(run, options.catalog)[0]
    return site, CarbonPath.of(site, options.intensity, ledger)


def read_run(
    ledger: Ledger, run: RunInfo, options: TableOptions, *, hourly: bool, gaps: bool = True
) -> RunRead:
    """One transaction reading what a run's row needs, the run found once (Prometheus is asked later).

    Args:
        ledger: The ledger.
        run: The run.
        options: How runs become rows.
        hourly: Also read the energy of each hour (an hourly intensity needs it).
        gaps: Also read the gaps.
    """
    gated = gaps and (options.validity is not None or options.strict)
    with ledger.reading(run.id, f"read run {run.name!r}") as read:
        totals = read.energy_totals()
        return RunRead(
            totals=totals,
            nodes=read.job_nodes(),
            energy=None if options.prometheus_url else read_energy(read, totals, by_hour=hourly),
            gaps=gaps_of(read) if gaps else None,
            spans=read.device_spans() if gated else {},
            events=read.events() if gated else [],
            ranks=read.ranks(),
            span=read.span(),
        )


def run_footprint(ledger: Ledger, run: RunInfo, options: TableOptions) -> Footprint | None:
    """The footprint of one run, or None if it recorded no energy (its band widened by its gaps)."""
    site, carbon = carbon_path(ledger, run, options)
    read = read_run(ledger, run, options, hourly=carbon.hourly)
    return footprint_of(read, run, options, site, carbon)


def footprint_of(
    read: RunRead, run: RunInfo, options: TableOptions, site: Site, carbon: CarbonPath
) -> Footprint | None:
    """The footprint of one run from what was read of it, or None if it recorded no energy."""
    energy = energy_of(read, run, options)
    if energy is None:
        return None
    return footprint_for(energy, site, intensity=carbon.intensity, convention=options.convention)


def energy_of(read: RunRead, run: RunInfo, options: TableOptions) -> Energy | None:
    """The IT energy of one run from what was read of it (extrapolated, overhead applied); None if none."""
    nodes = read.nodes
    if options.prometheus_url:
        energy = job_energy(_prometheus_rows(run, options, nodes), nodes.node_count)
    else:
        energy = read.energy
        if energy is not None and nodes.node_count > 1:  # K of N nodes measured: N x their mean
            energy = job_energy(read.totals, nodes.node_count, energy.by_hour_j)
    if energy is None:
        return None
    overhead = overhead_for(run, options)
    if overhead is not None and _gpu_only(read.totals, options, overhead):
        energy = with_overhead(energy, overhead.factor, overhead.band)
    if read.gaps is not None and read.gaps.widen_j:  # one band for every reader (issue 38)
        energy = replace(energy, unmeasured_j=read.gaps.widen_j)
    return energy


def gpu_only_overhead(ledger: Ledger, run: RunInfo, options: TableOptions) -> bool:
    """Whether the overhead multiplier applies: one was given and the run measured GPUs and nothing else."""
    overhead = overhead_for(run, options)
    if overhead is None or options.prometheus_url:
        return False
    return _gpu_only(ledger.energy_totals(run.id), options, overhead)


def overhead_for(run: RunInfo, options: TableOptions) -> Overhead | None:
    """The multiplier for `run`: its site's measured one where calibrated, else the given constant."""
    return options.calibrations.get(options.site or run.site or "", options.overhead)


def _gpu_only(totals: Sequence[EnergyTotal], options: TableOptions, overhead: Overhead | None) -> bool:
    if overhead is None or options.prometheus_url:
        return False
    return {total.kind for total in totals} == {Kind.GPU}


def with_overhead(energy: Energy, factor: float, band: tuple[float, float] | None = None) -> Energy:
    """GPU-only energy scaled to the whole server; the added part is labelled estimated and shown apart.

    A measured multiplier's `band` (lowest, highest factor) widens the added part's band.
    """
    low, high = sum(f.low_j for f in energy.figures), sum(f.high_j for f in energy.figures)
    extra = factor - 1.0
    low_extra, high_extra = (extra, extra) if band is None else (band[0] - 1.0, band[1] - 1.0)
    # the rest of the server, estimated from the GPUs' energy (Kind.NODE: no component measured it)
    rest = EnergyFigure(Kind.NODE, Source.ESTIMATED, energy.it_j * extra, low * low_extra, high * high_extra)
    hours = energy.by_hour_j
    return Energy(
        (*energy.figures, rest),
        None if hours is None else {hour: j * factor for hour, j in hours.items()},
        energy.it_j,
        energy_label([*energy.source.split("+"), "estimated"]) if energy.label else "",
    )


def run_row(ledger: Ledger, run: RunInfo, options: TableOptions) -> TableRow:
    """One run's row (its model, or its name when no model was recorded), read in one transaction."""
    label = f"{run.model or run.name} ({run.name}, {run.role})"
    carbon: CarbonPath | None = None
    if has_site(run, options):
        site, carbon = carbon_path(ledger, run, options)
        read = read_run(ledger, run, options, hourly=carbon.hourly)
    else:  # energy never depends on a site: the row shows it, CO2 and water say what to pass
        read = read_run(ledger, run, options, hourly=False)
    missing = _missing_hours(read, carbon)
    verdict = _gate(run, read, options, missing)
    found: Footprint | Energy | None = None
    if carbon is not None and not missing:
        found = footprint_of(read, run, options, site, carbon)
    else:  # no site, or an intensity without some of the run's hours: the energy alone
        found = energy_of(read, run, options)
    if found is None:
        empty = ("no energy recorded",) if has_site(run, options) else (SITELESS_NOTE,)
        reasons = verdict.reasons if verdict is not None else None
        return TableRow(label, None, None, None, None, None, None, "none", notes=empty, validity=reasons)
    siteless = () if isinstance(found, Footprint) else (SITELESS_NOTE,) if carbon is None else ()
    if missing:
        siteless = (f"the intensity lacks {len(missing)} hour(s) with energy: CO2 and water not computed",)
    notes: tuple[str, ...] = (*_run_notes(run, options), *siteless)
    nodes = read.nodes
    if nodes.node_count > 1 or len(nodes.joined) > 1 or nodes.outages or nodes.collisions:
        notes = (nodes.describe(sorted({t.host for t in read.totals})), *notes)
    overhead = overhead_for(run, options)
    if overhead is not None and _gpu_only(read.totals, options, overhead):
        notes = (*notes, overhead.label)
    elif overhead is not None:
        notes = (*notes, "overhead multiplier not applied: CPU/DRAM (or node) energy was measured")
    if (boundary := node_boundary(read.totals)) is not None:  # the meter counts; its parts beside it
        notes = (*notes, boundary.note())
    if verdict is not None:
        notes = (*notes, verdict.note())
    if isinstance(found, Footprint):
        row = TableRow.from_footprint(label, found, notes=notes)
    else:
        row = TableRow.from_energy(label, found, notes=notes)
    assert read.gaps is not None  # read_run reads them unless told not to
    gpu_j = sum(t.energy_j for t in read.totals if t.figure.kind == Kind.GPU)
    energy_j = None if row.energy_j is None else midpoint(row.energy_j)
    efficiency = efficiency_of(read.ranks, energy_j, (gpu_j, read.gpu_seconds()), run.device_model)
    reasons = verdict.reasons if verdict is not None else None
    return replace(with_gaps(row, read.gaps), validity=reasons, efficiency=efficiency)


def _prometheus_rows(run: RunInfo, options: TableOptions, nodes: JobNodes) -> list[EnergyTotal]:
    """The run's devices in Prometheus: by its `run` label when it spans nodes, else by its host."""
    assert options.prometheus_url is not None
    end_s = run.end_s if run.end_s is not None else options.now_s()
    if nodes.node_count > 1 or len(nodes.joined) > 1 or nodes.outages or nodes.collisions:
        # a job's agents stop counting at its end and are scraped once more after it
        settle_s = float(START_LOOKBACK_S) if run.end_s is not None else 0.0
        return energy_counted(
            options.prometheus_url, run.start_s, end_s, matchers={"run": run.name}, settle_s=settle_s
        )
    matchers = {"host": run.host} if run.host else None
    return energy_counted(options.prometheus_url, run.start_s, end_s, matchers=matchers)


def _gate(
    run: RunInfo, read: RunRead, options: TableOptions, missing_hours: Sequence[int]
) -> Validity | None:
    """The validity gate's verdict on the run (None: the gate is off).

    Raises:
        ConfigError: `strict` and the run is not valid.
    """
    if options.validity is None and not options.strict:
        return None
    assert read.gaps is not None  # read_run reads them unless told not to
    evidence = RunEvidence(read.totals, read.gaps, read.spans, read.events, missing_hours)
    verdict = run_validity(run, evidence, options.validity)
    if options.strict and not verdict.valid:
        raise ConfigError(f"run {run.name!r} refused (strict): {verdict.note()}")
    return verdict


def _missing_hours(read: RunRead, carbon: CarbonPath | None) -> list[int]:
    """Hour starts (Unix s) with energy that an hourly intensity lacks (none for a constant one)."""
    hours = read.energy.by_hour_j if read.energy is not None else None
    if carbon is None or not carbon.hourly or not hours:
        return []
    missing = []
    for hour in sorted(hours):
        try:
            carbon.intensity.kg_per_kwh_at(float(hour))
        except ConfigError:
            missing.append(hour)
    return missing


def _run_notes(run: RunInfo, options: TableOptions) -> tuple[str, ...]:
    notes = []
    if options.prometheus_url:
        notes.append(
            f"energy from Prometheus at {options.prometheus_url}: what each counter counted in the run "
            "(last value minus the value at the start; restarts summed)"
        )
    if run.status == Status.LOST:
        notes.append("run lost: its agent stopped renewing its lease; energy to its last row, the rest a gap")
    elif run.status != Status.FINISHED:
        notes.append(f"run status {run.status}: figures so far")
    if run.restarts:
        notes.append(f"restarted {run.restarts} time(s); energy of every attempt included")
    if run.site and not options.site and run.site_figures is None:
        notes.append(CATALOG_NOTE)
    return tuple(notes)
