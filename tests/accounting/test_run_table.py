"""A Table-19 row of a run reads the ledger in one transaction and finds the run once.

Six transactions a row, each looking the run up again by name, made a
project's table slow on a remote PostgreSQL and let a flush land between two
reads of one row (a total that disagrees with its hours).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import event

from wattlog.accounting.carbon.intensity import HourlySeries, IntensitySource
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.clock import FakeClock
from wattlog.events import EventKind
from wattlog.records import EnergyInterval, Gap, Kind, Source

H0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def one_node_run(tmp_path: Path) -> Ledger:
    """A run of one node over two hours (GPU and CPU), with a gap and a restart, so every read is needed."""
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'ledger.db'}"), clock=FakeClock(wall_offset_s=H0))
    run = ledger.start_run("r", RunSpec(model="m", site="jupiter", host="node0"))
    rows = [
        EnergyInterval.of(
            "node0", device, kind, Source.COUNTER, H0 + s, H0 + s + 600, 6e6, 5.7e6, 6.3e6, 1e5, 2e5
        )
        for s in range(0, 7200, 600)
        for device, kind in (("GPU-0", Kind.GPU), ("cpu", Kind.CPU))
    ]
    ledger.record_intervals(run.id, rows, [Gap("node0", "GPU-0", H0 + 7200, H0 + 7260, "agent down")])
    ledger.record_event(run.id, EventKind.RESTART, time_s=H0 + 7300)
    return ledger


@pytest.mark.parametrize("hourly", [False, True], ids=["constant-intensity", "hourly-intensity"])
def test_a_one_node_runs_row_is_one_transaction_finding_the_run_once(tmp_path: Path, hourly: bool) -> None:
    ledger = one_node_run(tmp_path)
    run = ledger.get_run("r")
    intensity: IntensitySource | None = (
        HourlySeries({int(H0): 0.3, int(H0) + 3600: 0.4, int(H0) + 7200: 0.5}) if hourly else None
    )
    options = TableOptions(catalog=site_catalog(None), intensity=intensity)
    begins: list[object] = []
    run_lookups: list[str] = []
    event.listen(ledger.engine, "begin", begins.append)

    @event.listens_for(ledger.engine, "before_cursor_execute")
    def _lookups(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        if "FROM run " in statement or statement.rstrip().endswith("FROM run"):
            run_lookups.append(statement)

    row = run_row(ledger, run, options)

    assert len(begins) == 1
    assert len(run_lookups) == 1
    # the row is whole: energy, its band, the gaps' note
    assert row.energy_j is not None and row.energy_band_j is not None
    assert any(note.startswith("gaps: ") for note in row.notes)
