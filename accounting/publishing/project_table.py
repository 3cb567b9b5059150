"""A project's whole development, as the OLMo 2 paper's follow-up reports it (Morrison et al., ICLR 2025).

- Table 1: development grouped by scale group, stage or phase: GPU-hours, MWh,
  number of runs, tCO2eq and water kL per group, and the total.
- Table 2: the final runs one by one.
- Table 3: inference runs with their request count, and the number of requests
  whose emissions equal the training's (the break-even).

Embodied emissions and water (per GPU-hour, per device model, see
:mod:`wattlog.accounting.devices`) are separate columns and enter the project
total on a line of their own: never folded into the operational figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wattlog.accounting.devices import DeviceCatalog, device_catalog
from wattlog.accounting.ledger.models import Phase, Role, Stage
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import RunInfo
from wattlog.accounting.publishing.footprint import Footprint
from wattlog.accounting.publishing.render import format_figure
from wattlog.accounting.publishing.run_table import TableOptions, has_site, run_footprint
from wattlog.accounting.ranges import Quantity, Range, bounds
from wattlog.accounting.units import mwh_of, readable, readable_co2_t, readable_count, readable_water_kl, sig3

GROUPINGS = ("group", "stage", "phase")
"""What `wattlog table --project P --by` groups Table 1 by."""


def run_phase(run: RunInfo) -> str:
    """The run's phase: as recorded, else final for the final role and development for every other."""
    if run.phase:
        return run.phase
    return Phase.FINAL.value if run.role == Role.FINAL else Phase.DEVELOPMENT.value


@dataclass(frozen=True, slots=True)
class RunFigures:
    """One run's figures for the project tables.

    Attributes:
        run: The ledger's run.
        phase: development or final.
        gpu_hours: GPU-hours (as recorded, else derived from its GPU rows).
        gpu_hours_recorded: Whether gpu_hours was recorded rather than derived.
        footprint: Operational footprint (None: no energy, or no site).
        embodied_t: Embodied emissions, t CO2e (None where the device has no figure).
        embodied_kl: Embodied water, kL.
        device: Device model the embodied figures are for.
        device_assumed: Whether the device model was assumed (not recorded).
    """

    run: RunInfo
    phase: str
    gpu_hours: float
    gpu_hours_recorded: bool
    footprint: Footprint | None
    embodied_t: float | None
    embodied_kl: float | None
    device: str
    device_assumed: bool


def run_figures(ledger: Ledger, run: RunInfo, options: TableOptions, devices: DeviceCatalog) -> RunFigures:
    """GPU-hours, footprint and embodied figures of one run."""
    if run.gpu_hours is not None:
        gpu_hours, recorded = float(run.gpu_hours), True
    else:
        gpu_hours, recorded = ledger.device_seconds(run.name, "gpu")[0] / 3600.0, False
    model, assumed = devices.get(run.device_model)
    per_kg, per_l = model.embodied_kg_per_gpu_hour, model.embodied_l_per_gpu_hour
    return RunFigures(
        run=run,
        phase=run_phase(run),
        gpu_hours=gpu_hours,
        gpu_hours_recorded=recorded,
        footprint=run_footprint(ledger, run, options) if has_site(run, options) else None,
        embodied_t=None if per_kg is None else gpu_hours * per_kg / 1000.0,
        embodied_kl=None if per_l is None else gpu_hours * per_l / 1000.0,
        device=model.name,
        device_assumed=assumed,
    )


@dataclass(frozen=True, slots=True)
class Totals:
    """Sums over a set of runs (None where no run gave the figure)."""

    runs: int
    gpu_hours: float
    energy_j: Quantity | None
    co2_t: Quantity | None
    water_kl: Quantity | None
    embodied_t: float | None
    embodied_kl: float | None


def _add(values: Sequence[Quantity | None]) -> Quantity | None:
    found = [v for v in values if v is not None]
    if not found:
        return None
    total: Quantity = 0.0
    for value in found:
        total = total + value
    return total


def totals(figures: Sequence[RunFigures]) -> Totals:
    """Add runs' figures; embodied stays apart from operational."""
    prints = [f.footprint for f in figures]
    return Totals(
        runs=len(figures),
        gpu_hours=sum(f.gpu_hours for f in figures),
        energy_j=_add([p.it_energy_j if p else None for p in prints]),
        co2_t=_add([p.co2_t if p else None for p in prints]),
        water_kl=_add([p.water_kl if p else None for p in prints]),
        embodied_t=_add([f.embodied_t for f in figures]),  # type: ignore[arg-type]
        embodied_kl=_add([f.embodied_kl for f in figures]),  # type: ignore[arg-type]
    )


_KEYS: dict[str, Callable[[RunFigures], str]] = {
    "group": lambda f: f.run.scale_group or "(no group)",
    "stage": lambda f: f.run.stage or "(no stage)",
    "phase": lambda f: f.phase,
}

TABLE1_HEADERS = [
    "GPU-hours", "Energy (MWh)", "Runs", "Emissions (tCO2eq)", "Water (kL)",
    "Embodied (tCO2eq)", "Embodied water (kL)",
]  # fmt: skip


def _cells(t: Totals) -> list[str]:
    return [
        sig3(t.gpu_hours) if t.gpu_hours < 10 else f"{t.gpu_hours:,.0f}",
        format_figure("total_power_mwh", mwh_of(t.energy_j)),
        str(t.runs),
        format_figure("co2_t", t.co2_t),
        format_figure("water_kl", t.water_kl),
        format_figure("co2_t", t.embodied_t),
        format_figure("water_kl", t.embodied_kl),
    ]


@dataclass(frozen=True, slots=True)
class Grid:
    """A titled grid of text cells with its notes.

    Rendered by wattlog.accounting.publishing.render.render_grid.
    """

    title: str
    headers: list[str]
    cells: list[list[str]]
    notes: list[str]
    right: frozenset[int]


def table1(figures: Sequence[RunFigures], by: str, project: str) -> Grid:
    """The follow-up's Table 1: one row per group (scale group, stage or phase), then the total."""
    key = _KEYS[by]
    development = [f for f in figures if f.phase == Phase.DEVELOPMENT.value]
    final = [f for f in figures if f.phase != Phase.DEVELOPMENT.value]
    label = {"group": "Scale group", "stage": "Stage", "phase": "Phase"}[by]
    whole = totals(figures)
    if by == "phase":
        phases = (("development", development), ("final", final))
        cells = [[name, *_cells(totals(runs))] for name, runs in phases]
    else:
        groups: dict[str, list[RunFigures]] = {}
        for f in sorted(development, key=key):
            groups.setdefault(key(f), []).append(f)
        cells = [[f"{name} (development)", *_cells(totals(runs))] for name, runs in groups.items()]
        cells.append(["Development total", *_cells(totals(development))])
        cells.append(["Final runs (Table 2)", *_cells(totals(final))])
    cells.append([f"Total ({project})", *_cells(whole)])
    notes = [*development_share(figures), *total_lines(whole), *_caveats(figures)]
    return Grid(
        f"Table 1: {project}, development by {label.lower()}, final runs, total",
        [label, *TABLE1_HEADERS],
        cells,
        notes,
        frozenset(range(1, 8)),
    )


def table2(figures: Sequence[RunFigures], project: str) -> Grid:
    """The follow-up's Table 2: the final runs, one row each."""
    final = [f for f in figures if f.phase == Phase.FINAL.value]
    cells = []
    for f in final:
        t = totals([f])
        cells.append(
            [f.run.model or f.run.name, f.run.name, f.run.stage or "-", *_cells(t)[:2], *_cells(t)[3:]]
        )
    headers = ["Model", "Run", "Stage", "GPU-hours", "Energy (MWh)", *TABLE1_HEADERS[3:]]
    notes = [] if final else ["no final runs recorded (mark one with --role final or --phase final)"]
    return Grid(f"Table 2: final runs of {project}", headers, cells, notes, frozenset(range(3, 9)))


def development_share(figures: Sequence[RunFigures]) -> list[str]:
    """ "Development: 52 % of GPU-hours, 49 % of energy, 49 % of emissions" (of the project total)."""
    dev = totals([f for f in figures if f.phase == Phase.DEVELOPMENT.value])
    whole = totals(figures)
    parts = []
    for name, part, total in (
        ("GPU-hours", dev.gpu_hours, whole.gpu_hours),
        ("energy", dev.energy_j, whole.energy_j),
        ("emissions", dev.co2_t, whole.co2_t),
    ):
        share = _share(part, total)
        if share is not None:
            parts.append(f"{share} of {name}")
    if not parts:
        return []
    return [f"Development (sweeps, ablations, failed runs): {', '.join(parts)} of the project total."]


def _share(part: Quantity | None, total: Quantity | None) -> str | None:
    if total is None:
        return None
    t = Range.of(total).mid
    if t <= 0:
        return None
    p = 0.0 if part is None else Range.of(part).mid
    return f"{100.0 * p / t:.0f} %"


def total_lines(t: Totals) -> list[str]:
    """The project total, operational and embodied apart, then together, in readable units."""
    if t.co2_t is None:
        return []
    co2 = bounds(t.co2_t)
    water = bounds(t.water_kl) if t.water_kl is not None else (0.0, 0.0)
    lines = [
        f"Project total, operational: {_readable_range(co2, readable_co2_t)}, "
        f"{_readable_range(water, readable_water_kl)} of water."
    ]
    if t.embodied_t is not None:
        emb_kl = t.embodied_kl or 0.0
        lines.append(
            f"Embodied (hardware, amortised per GPU-hour): {readable_co2_t(t.embodied_t)}, "
            f"{readable_water_kl(emb_kl)} of water; with it the project total is "
            f"{_readable_range((co2[0] + t.embodied_t, co2[1] + t.embodied_t), readable_co2_t)} and "
            f"{_readable_range((water[0] + emb_kl, water[1] + emb_kl), readable_water_kl)}."
        )
    return lines


def _readable_range(ends: tuple[float, float], fmt: Callable[[float], str]) -> str:
    lo, hi = fmt(ends[0]), fmt(ends[1])
    return lo if lo == hi else f"{lo} - {hi}"


def _caveats(figures: Sequence[RunFigures], devices: DeviceCatalog | None = None) -> list[str]:
    notes = []
    assumed = sorted({f.device for f in figures if f.device_assumed})
    if assumed:
        notes.append(
            f"Embodied figures assume {', '.join(assumed)} for runs that recorded no device model "
            "(wattlog run --device-model)."
        )
    for device in sorted({f.device for f in figures}):
        model, _ = (devices or device_catalog()).get(device)
        if model.embodied_kg_per_gpu_hour is not None:
            notes.append(
                f"Embodied per {device} GPU-hour: {sig3(model.embodied_kg_per_gpu_hour)} kg CO2e and "
                f"{sig3(model.embodied_l_per_gpu_hour or 0.0)} L ({model.embodied_source()})."
            )
        else:
            notes.append(f"No sourced embodied figures for {device}: its embodied columns show -.")
    derived = [f.run.name for f in figures if not f.gpu_hours_recorded]
    if derived:
        notes.append(
            f"GPU-hours of {len(derived)} run(s) derived from their GPU rows' time "
            "(record them with `wattlog run --gpu-hours`)."
        )
    missing = [f.run.name for f in figures if f.footprint is None]
    if missing:
        notes.append(f"No footprint (no energy or no site) for: {', '.join(missing)}.")
    notes.append("Operational figures exclude embodied; the embodied columns are never folded into them.")
    return notes


@dataclass(frozen=True, slots=True)
class BreakEven:
    """An inference run against its project's training (the follow-up's Table 3).

    Attributes:
        run: The inference run's name.
        requests: Requests it served.
        energy_per_request_j: Joules per request (IT energy x PUE).
        co2_per_request_g: Grams CO2e per request.
        training_co2_t: Emissions of every non-inference run of the project, t.
        requests_to_break_even: Requests whose emissions equal the training's.
    """

    run: str
    requests: int
    energy_per_request_j: float
    co2_per_request_g: float
    training_co2_t: float
    requests_to_break_even: float


def break_even(figures: Sequence[RunFigures]) -> list[BreakEven]:
    """For each inference run with a request count, the requests whose emissions equal the training's."""
    training = totals([f for f in figures if f.run.stage != Stage.INFERENCE.value])
    if training.co2_t is None:
        return []
    train_t = Range.of(training.co2_t).mid
    out = []
    for f in figures:
        if f.run.stage != Stage.INFERENCE.value or not f.run.requests or f.footprint is None:
            continue
        co2_g = Range.of(f.footprint.co2_t).mid * 1e6 / f.run.requests
        energy_j = Range.of(f.footprint.facility_energy_j).mid / f.run.requests
        if co2_g <= 0:
            continue
        out.append(BreakEven(f.run.name, f.run.requests, energy_j, co2_g, train_t, train_t * 1e6 / co2_g))
    return out


def table3(items: Sequence[BreakEven], project: str) -> Grid:
    """Inference runs and their break-even request counts."""
    headers = ["Inference run", "Requests", "Energy per request", "CO2e per request", "Break-even requests"]
    cells = [
        [
            b.run,
            readable_count(b.requests),
            readable(b.energy_per_request_j, "energy"),
            readable(b.co2_per_request_g, "mass"),
            readable_count(b.requests_to_break_even),
        ]
        for b in items
    ]
    notes = (
        [
            f"Break-even: requests whose emissions equal the training of {project} "
            f"({readable_co2_t(items[0].training_co2_t)}: every run whose stage is not inference)."
        ]
        if items
        else []
    )
    return Grid(f"Table 3: inference of {project}", headers, cells, notes, frozenset(range(1, 5)))


def project_tables(ledger: Ledger, project: str, by: str, options: TableOptions) -> list[Grid]:
    """Tables 1 and 2 (and 3 where inference runs recorded their requests) of a project."""
    devices = device_catalog()
    figures = [run_figures(ledger, run, options, devices) for run in ledger.runs(project)]
    grids = [table1(figures, by, project), table2(figures, project)]
    items = break_even(figures)
    if items:
        grids.append(table3(items, project))
    return grids
