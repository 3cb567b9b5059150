"""Invariants of the disclosure model and the card checks, as properties."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from wattlog.accounting.publishing.disclosure.card_table import read_card
from wattlog.accounting.publishing.disclosure.cards import check_table
from wattlog.accounting.publishing.disclosure.gather import combine
from wattlog.accounting.publishing.disclosure.model import Basis, Boundary, BoundaryEnergy, PhaseFigures

_energy = st.tuples(st.floats(1.0, 1e12), st.floats(0.5, 1.0), st.floats(1.0, 1.5))


def _run(name: str, parts: dict[Boundary, tuple[float, float, float]]) -> PhaseFigures:
    energy = tuple(BoundaryEnergy(b, e, e * lo, e * hi, "sampled") for b, (e, lo, hi) in parts.items())
    return PhaseFigures(name, (name,), energy, Basis.MEASURED, 1.0, 1.0, 8, None, None, 0, 0.0, (), (), None,
                        (0.0, 86_400.0))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from(list(Boundary)), _energy, min_size=1), min_size=1, max_size=6)
)
def test_a_phase_sums_each_boundary_only_where_every_run_has_it(runs: list[dict]) -> None:  # type: ignore[type-arg]
    phase = combine("development", [_run(f"r{i}", parts) for i, parts in enumerate(runs)])
    for boundary in Boundary:
        found = phase.at(boundary)
        if all(boundary in parts for parts in runs):
            assert found is not None
            total = sum(parts[boundary][0] for parts in runs)
            assert abs(found.energy_j - total) <= 1e-9 * total
            assert found.low_j <= found.energy_j * (1 + 1e-12) and found.energy_j <= found.high_j * (
                1 + 1e-12
            )
        else:
            assert found is None  # never a partial sum across runs


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**7), st.integers(1, 10**6)), min_size=1, max_size=6))
def test_a_card_whose_totals_are_its_rows_sums_raises_nothing(rows: list[tuple[int, int]]) -> None:
    lines = ["| Model | Time (GPU hours) | Carbon Emitted (tCO2eq) |", "|---|---|---|"]
    lines += [f"| M{i} | {hours} | {centi / 100:.2f} |" for i, (hours, centi) in enumerate(rows)]
    total_hours, total_centi = sum(h for h, _ in rows), sum(c for _, c in rows)
    with tempfile.TemporaryDirectory(prefix="wattlog-card-") as folder:
        path = Path(folder) / "card.md"
        path.write_text(
            "\n".join([*lines, f"| Total | {total_hours} | {total_centi / 100:.2f} |"]), encoding="utf-8"
        )
        assert check_table(read_card(path)) == []
        # hours beyond the rows' rounding: a total that is not its rows', and hours with no tonnes
        off = total_hours + len(rows) + 1
        path.write_text("\n".join([*lines, f"| Total | {off} | {total_centi / 100:.2f} |"]), encoding="utf-8")
        assert [f.check for f in check_table(read_card(path))] == ["totals vs rows", "hours vs tonnes"]
