"""A project's rows: each final run, a subtotal per other role, and the whole development.

OPT-175B reported that ablations, baselines and downtime roughly doubled its footprint: the
final run alone understates it, so a project's table adds them up beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

from wattlog.accounting.ledger.models import Role
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.publishing.footprint import Footprint
from wattlog.accounting.publishing.render import TableRow
from wattlog.accounting.publishing.run_table import TableOptions, has_site, run_footprint, run_row
from wattlog.accounting.ranges import Quantity, Range, midpoint
from wattlog.errors import ConfigError


def project_rows(ledger: Ledger, project: str, options: TableOptions) -> list[TableRow]:
    """Each final run, a subtotal per other role, and the whole development of the project."""
    runs = ledger.runs(project)
    if not runs:
        raise ConfigError(f"project {project!r} has no runs")
    prints = {
        run.name: run_footprint(ledger, run, options) if has_site(run, options) else None for run in runs
    }
    rows = [run_row(ledger, run, options) for run in runs if run.role == Role.FINAL]
    for role in Role:
        group = [run for run in runs if run.role == role]
        if role is not Role.FINAL and group:
            rows.append(_sum_row(f"{role.value} runs ({len(group)})", [prints[r.name] for r in group]))
    total = _sum_row(f"{project}: whole development ({len(runs)} runs)", list(prints.values()))
    final = [prints[r.name] for r in runs if r.role == Role.FINAL and prints[r.name] is not None]
    if final and total.energy_j is not None:
        final_j = sum(f.it_energy_j for f in final if f is not None)
        if final_j > 0:
            ratio = midpoint(total.energy_j) / final_j
            total = total.with_notes(f"the whole development used {ratio:.2f}x the final run's energy")
    rows.append(total)
    return rows


def _sum_row(label: str, footprints: Sequence[Footprint | None]) -> TableRow:
    """Add footprints; PUE, intensity and WUE show only where all runs share them."""
    found = [f for f in footprints if f is not None]
    missing = len(footprints) - len(found)
    notes = [f"{missing} run(s) recorded no energy"] if missing else []
    if not found:
        return TableRow(label, None, None, None, None, None, None, "none", notes=tuple(notes))

    def total(values: Sequence[Quantity]) -> Quantity:
        out: Quantity = 0.0
        for value in values:
            out = out + value
        return out

    def shared(values: Sequence[Quantity]) -> Quantity | None:
        return values[0] if all(v == values[0] for v in values) else None

    sites = sorted({f.site for f in found})
    if len(sites) > 1:
        notes.append(f"runs at several sites ({', '.join(sites)}): PUE, intensity and WUE vary, sums shown")
    split = all(f.gpu_j is not None for f in found)
    band = Range.exact(0.0)
    for f in found:
        band = band + f.energy_band_j
    return TableRow(
        model=label,
        energy_j=total([f.it_energy_j for f in found]),
        pue=shared([f.pue for f in found]),
        carbon_intensity_kg_per_kwh=shared([f.intensity_kg_per_kwh for f in found]),
        co2_t=total([f.co2_t for f in found]),
        wue_l_per_kwh=shared([f.wue_l_per_kwh for f in found]),
        water_kl=total([f.water_kl for f in found]),
        energy_source="+".join(sorted({s for f in found for s in f.energy_source.split("+")})),
        energy_band_j=band,
        hourly_intensity=any(f.hourly for f in found),
        gpu_j=sum(f.gpu_j or 0.0 for f in found) if split else None,
        host_j=sum(f.host_j or 0.0 for f in found) if split else None,
        convention=found[0].convention,
        notes=tuple(notes),
    )
