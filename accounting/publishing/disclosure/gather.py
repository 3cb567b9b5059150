"""The disclosure model from the ledger: a run's figures through the table code, a project's by phase."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version

from wattlog.accounting.carbon.sites import get_site
from wattlog.accounting.devices import DeviceCatalog, device_catalog
from wattlog.accounting.ledger.jobs import rank_progress
from wattlog.accounting.ledger.models import Stage
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import EnergyTotal, RunInfo
from wattlog.accounting.publishing.disclosure.model import (
    S_PER_DAY,
    Basis,
    Boundary,
    BoundaryEnergy,
    Disclosure,
    PhaseFigures,
    PhaseName,
    SiteFactors,
    basis_of,
    combine_basis,
)
from wattlog.accounting.publishing.project_table import run_figures, run_phase
from wattlog.accounting.publishing.render import TableRow
from wattlog.accounting.publishing.run_table import TableOptions, has_site, run_row
from wattlog.accounting.ranges import Range, bounds, midpoint
from wattlog.errors import ConfigError
from wattlog.records import Kind

POST_TRAINING_STAGES = frozenset({Stage.SFT.value, Stage.DPO.value, Stage.RL.value})
EXCLUDED_STAGES = frozenset({Stage.INFERENCE.value})


def tool_version() -> str:
    """ "wattlog X.Y" (or "wattlog dev" from a source tree)."""
    try:
        return f"wattlog {version('wattlog')}"
    except PackageNotFoundError:
        return "wattlog dev"


def disclosure_phase(run: RunInfo) -> str | None:
    """The project phase a run belongs to; None for a run no training phase holds (inference)."""
    if run.stage in EXCLUDED_STAGES:
        return None
    phase = run_phase(run)
    if phase == PhaseName.FINAL and run.stage in POST_TRAINING_STAGES:
        return PhaseName.POST_TRAINING.value
    return phase


def disclosure_of_run(
    ledger: Ledger, name: str, options: TableOptions, devices: DeviceCatalog | None = None
) -> Disclosure:
    """One run's disclosure (one phase: the run's own).

    Raises:
        ConfigError: No such run.
    """
    run = ledger.get_run(name)
    figures = run_phase_figures(ledger, run, options, devices or device_catalog())
    phase = disclosure_phase(run) or run.stage or run_phase(run)
    return Disclosure(run.name, "run", run.model, (replace(figures, phase=phase),), (), tool_version())


def disclosure_of_project(
    ledger: Ledger, project: str, options: TableOptions, devices: DeviceCatalog | None = None
) -> Disclosure:
    """A project's disclosure: development, final and post-training, each summed over its runs.

    Raises:
        ConfigError: The project has no runs.
    """
    runs = ledger.runs(project)
    if not runs:
        raise ConfigError(f"project {project!r} has no runs in the ledger (see `wattlog runs`)")
    catalog = devices or device_catalog()
    by_phase: dict[str, list[PhaseFigures]] = {}
    excluded = []
    for run in runs:
        phase = disclosure_phase(run)
        if phase is None:
            excluded.append(f"{run.name}: {run.stage} (not training; not in any phase)")
            continue
        by_phase.setdefault(phase, []).append(run_phase_figures(ledger, run, options, catalog))
    phases = tuple(combine(name, by_phase[name]) for name in PhaseName if name in by_phase)
    models = sorted({r.model for r in runs if r.model})
    return Disclosure(project, "project", ", ".join(models), phases, tuple(excluded), tool_version())


def run_phase_figures(
    ledger: Ledger, run: RunInfo, options: TableOptions, devices: DeviceCatalog
) -> PhaseFigures:
    """One run's figures: its Table-19 row (energy, band, source, gaps, validity) and its GPU-hours."""
    row = run_row(ledger, run, options)
    figures = run_figures(ledger, run, options, devices)
    ranks = rank_progress(ledger, run.name)
    tokens = sum(r.tokens_total for r in ranks) if ranks else None
    per_token = next((r.flops_per_token for r in ranks if r.flops_per_token), None)
    gaps = ledger.gaps(run.name)
    end_s = run.end_s if run.end_s is not None else ledger.wall_s()
    gpus = ledger.device_seconds(run.name, "gpu")[1]
    footprint = figures.footprint
    return PhaseFigures(
        phase=run_phase(run),
        runs=(run.name,),
        energy=boundaries(
            ledger.energy_totals(run.name), row, footprint.facility_energy_j if footprint else None
        ),
        basis=basis_of(row.energy_source),
        wall_clock_days=max(0.0, end_s - run.start_s) / S_PER_DAY,
        gpu_days=figures.gpu_hours / 24.0 if figures.gpu_hours else None,
        gpus=gpus,
        flops=tokens * per_token if tokens and per_token else None,
        tokens=tokens or None,
        gap_count=len(gaps),
        gap_device_s=sum(g.duration_s for g in gaps),
        invalid=tuple(f"{run.name}: {reason}" for reason in row.validity or ()),
        sites=(site_factors(run, options),) if has_site(run, options) else (),
        co2_t=footprint.co2_t if footprint else None,
        period_s=(run.start_s, end_s),
        notes=()
        if has_site(run, options)
        else (f"{run.name}: recorded without a site (no facility energy)",),
        embodied_t=None if figures.device_assumed else figures.embodied_t,  # never another board's figure
    )


def boundaries(
    totals: Sequence[EnergyTotal], row: TableRow, facility_j: float | Range | None
) -> tuple[BoundaryEnergy, ...]:
    """GPU, node and facility figures of a run's row, each with its band; absent where unknown.

    The node boundary exists only where something beyond the GPUs was counted (CPU/DRAM or a
    meter measured, or a labelled overhead added): a GPU-only run's IT energy is GPU energy.
    """
    if row.energy_j is None or row.energy_band_j is None:
        return ()
    it_j, band = midpoint(row.energy_j), row.energy_band_j
    kinds = {t.figure.kind for t in totals}
    gpus = [t.figure for t in totals if t.figure.kind == Kind.GPU]
    gpu_j = row.gpu_j if row.gpu_j else (it_j if kinds == {Kind.GPU} else None)
    found = []
    measured = sum(f.energy_j for f in gpus)
    if gpu_j and measured > 0:
        scale = gpu_j / measured  # K of N nodes measured: scaled as the row is
        sources = "+".join(sorted({str(f.source) for f in gpus}))
        low, high = sum(f.low_j for f in gpus) * scale, sum(f.high_j for f in gpus) * scale
        found.append(BoundaryEnergy(Boundary.GPU, gpu_j, low, high, sources))
    node_known = bool(kinds - {Kind.GPU}) or (gpu_j is not None and it_j > gpu_j)
    if node_known:
        found.append(BoundaryEnergy(Boundary.NODE, it_j, band.lo, band.hi, row.energy_source))
    if facility_j is not None and row.pue is not None:
        pue_lo, pue_hi = bounds(row.pue)
        source = (
            "derived (node x PUE)" if node_known else "derived (GPU x PUE: rest of the server not counted)"
        )
        mid = midpoint(facility_j)
        found.append(BoundaryEnergy(Boundary.FACILITY, mid, band.lo * pue_lo, band.hi * pue_hi, source))
    return tuple(found)


def site_factors(run: RunInfo, options: TableOptions) -> SiteFactors:
    """The factors of the site the run's figures used, each with its source."""
    site = get_site(options.site or run.site, options.catalog)
    intensity = site.intensity_source.describe() if site.intensity_source.source != "constant" else ""
    wue = site.wue_onsite_l_per_kwh + site.wue_offsite_l_per_kwh
    return SiteFactors(
        site=site.name,
        pue=site.pue,
        pue_source=site.source("pue"),
        intensity_kg_per_kwh=site.carbon_intensity_kg_per_kwh,
        intensity_source=intensity or site.source("carbon_intensity_kg_per_kwh"),
        wue_l_per_kwh=wue,
        wue_source=site.source("wue_offsite_l_per_kwh"),
    )


def combine(phase: str, runs: Sequence[PhaseFigures]) -> PhaseFigures:
    """A phase's figures from its runs'; a boundary some run lacks is absent (never summed partly)."""
    energy: list[BoundaryEnergy] = []
    for boundary in Boundary:
        parts = [p.at(boundary) for p in runs]
        if parts and all(e is not None for e in parts):
            total = parts[0]
            for part in parts[1:]:
                assert total is not None and part is not None
                total = total.plus(part)
            assert total is not None
            energy.append(total)
    periods = [p.period_s for p in runs if p.period_s is not None]
    period = (min(a for a, _ in periods), max(b for _, b in periods)) if periods else None
    sites = {s.site: s for p in runs for s in p.sites}
    co2 = [p.co2_t for p in runs]
    gpu_days = [p.gpu_days for p in runs]
    flops, tokens = [p.flops for p in runs], [p.tokens for p in runs]
    return PhaseFigures(
        phase=phase,
        runs=tuple(r for p in runs for r in p.runs),
        energy=tuple(energy),
        basis=combine_basis([p.basis for p in runs]) if runs else Basis.NONE,
        wall_clock_days=(period[1] - period[0]) / S_PER_DAY if period else None,
        gpu_days=sum(g for g in gpu_days if g is not None) if any(g is not None for g in gpu_days) else None,
        gpus=max((p.gpus for p in runs), default=0),
        flops=sum(f for f in flops if f is not None) if all(f is not None for f in flops) else None,
        tokens=sum(t for t in tokens if t is not None) if all(t is not None for t in tokens) else None,
        gap_count=sum(p.gap_count for p in runs),
        gap_device_s=sum(p.gap_device_s for p in runs),
        invalid=tuple(i for p in runs for i in p.invalid),
        sites=tuple(sites.values()),
        co2_t=_sum_quantity(co2),
        period_s=period,
        notes=tuple(n for p in runs for n in p.notes),
        embodied_t=_sum_quantity([p.embodied_t for p in runs]),  # type: ignore[arg-type]
    )


def _sum_quantity(values: Sequence[float | Range | None]) -> float | Range | None:
    if not values or any(v is None for v in values):
        return None
    total: float | Range = 0.0
    for value in values:
        assert value is not None
        total = total + value
    return total
