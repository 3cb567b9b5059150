"""Source and validity columns for the project's Tables 1-3 on the report page.

The project's tables showed 29 t of simulated energy with no word of where it came from nor whether
it may be published. Each run's energy source and validity verdict (the same gate as its own row)
are added: per run in Tables 2 and 3, per group in Table 1 (every source in it, and how many of its
runs are NOT VALID). A run not gated, or without energy, reads "-".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wattlog.accounting.publishing.project_table import Grid, run_phase
from wattlog.accounting.publishing.render import MISSING
from wattlog.accounting.publishing.run_table import TableOptions, run_row

if TYPE_CHECKING:
    from wattlog.accounting.ledger import Ledger
    from wattlog.accounting.ledger.views import RunInfo

HEADERS = ["Energy source", "Validity"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """One run's energy source ("simulated", "counter+sampled", "-"); validity ("valid", "NOT VALID", "-")."""

    source: str
    validity: str


def run_verdicts(ledger: Ledger, runs: Sequence[RunInfo], options: TableOptions) -> dict[str, Verdict]:
    """Each run's source and validity, from its own Table-19 row (the validity gate of `options`)."""
    verdicts = {}
    for run in runs:
        row = run_row(ledger, run, options)
        validity = MISSING if row.validity is None else ("NOT VALID" if row.validity else "valid")
        verdicts[run.name] = Verdict(row.energy_source or MISSING, validity)
    return verdicts


def group_verdict(verdicts: Sequence[Verdict]) -> Verdict:
    """A group's sources (each once) and how many of its runs are NOT VALID."""
    sources = sorted({s for v in verdicts for s in v.source.split("+") if s != MISSING})
    invalid = sum(v.validity == "NOT VALID" for v in verdicts)
    gated = [v for v in verdicts if v.validity != MISSING]
    validity = (
        MISSING if not gated else (f"NOT VALID ({invalid} of {len(verdicts)} runs)" if invalid else "valid")
    )
    return Verdict("+".join(sources) or MISSING, validity)


def with_verdicts(
    grids: Sequence[Grid], runs: Sequence[RunInfo], verdicts: Mapping[str, Verdict]
) -> list[Grid]:
    """Tables 1-3 (by phase) with the source and validity columns added."""
    by_phase: dict[str, list[Verdict]] = {}
    for run in runs:
        by_phase.setdefault(run_phase(run), []).append(verdicts[run.name])
    everyone = group_verdict(list(verdicts.values()))

    def table1(label: str) -> Verdict:
        return group_verdict(by_phase.get(label, [])) if label in by_phase else everyone

    lookups: list[tuple[int, Callable[[str], Verdict]]] = [
        (0, table1),
        (1, lambda name: verdicts.get(name, Verdict(MISSING, MISSING))),
        (0, lambda name: verdicts.get(name, Verdict(MISSING, MISSING))),
    ]
    out = []
    for grid, (column, lookup) in zip(grids, lookups, strict=False):
        cells = [[*row, *_pair(lookup(row[column]))] for row in grid.cells]
        out.append(Grid(grid.title, [*grid.headers, *HEADERS], cells, grid.notes, grid.right))
    return out


def _pair(verdict: Verdict) -> list[str]:
    return [verdict.source, verdict.validity]
