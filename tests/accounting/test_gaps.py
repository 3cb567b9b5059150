"""Gaps shown: `wattlog gaps RUN`, and per run in `wattlog table` with the band widened."""

from __future__ import annotations

import pytest

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.gaps import run_gaps
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.cli import main
from wattlog.clock import FakeClock
from wattlog.gap_reasons import GapReason
from wattlog.records import EnergyInterval, Gap, Kind, Source

T0 = 1_800_000_000.0


def row(device: str, start: float, end: float, joules: float) -> EnergyInterval:
    return EnergyInterval.of(
        "n", device, Kind.GPU, Source.COUNTER, T0 + start, T0 + end, joules, joules, joules
    )


@pytest.fixture
def url(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    clock = FakeClock(start_s=0.0, wall_offset_s=T0)
    ledger = Ledger(make_engine(url), clock=clock)
    run = ledger.start_run("gappy", RunSpec(site="jupiter"))
    ledger.record_intervals(
        run.id,
        [row("gpu0", 0, 10, 1000.0), row("gpu1", 0, 10, 1000.0)],
        [
            Gap("n", "gpu1", T0 + 4, T0 + 6, "lost: GPU_IS_LOST"),
            Gap("n", "gpu0", T0 + 2, T0 + 2.5, "counter reset (energy before the reset unknown)"),
            Gap("n", "gpu0", T0 + 8, T0 + 10, "agent down: the agent measuring this device stopped"),
        ],
    )
    clock.advance(30)  # the job died at 10 s and came back at 30 s
    ledger.start_run("gappy", resume=True)
    ledger.record_intervals(run.id, [row("gpu0", 30, 40, 1000.0)])
    ledger.engine.dispose()
    return url


def test_reasons_are_grouped() -> None:
    assert GapReason.of("lost: gone") is GapReason.DEVICE_LOST
    assert GapReason.of("counter may have wrapped more than once") is GapReason.COUNTER_RESET
    assert GapReason.of("agent down: x") is GapReason.AGENT_DOWN
    assert GapReason.of("spool full: energy of this stretch lost") is GapReason.NOT_STORED
    assert GapReason.of("no readings for 0.2 s") is GapReason.READ_FAILED


def test_an_old_ledgers_unstored_rows_widen_the_band(tmp_path) -> None:
    # a ledger written at 18aee5b: the spool's "not writable" loss read as a failed read there,
    # already inside the band, so the band was not widened for energy no row holds
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'old.db'}"), clock=FakeClock(wall_offset_s=T0))
    run = ledger.start_run("old", RunSpec(site="jupiter"))
    lost = "spool not writable (disk full): energy of this stretch lost, 1 rows, 200.0 J"
    ledger.record_intervals(run.id, [row("gpu0", 0, 10, 1000.0)], [Gap("n", "gpu0", T0 + 10, T0 + 12, lost)])
    summary = run_gaps(ledger, "old")
    assert summary.by_reason() == {GapReason.NOT_STORED: (1, 2.0)}
    assert summary.widen_j == pytest.approx(100.0 * 2)  # gpu0's 100 W over the 2 s no row holds


def test_run_gaps_counts_seconds_reasons_and_downtime_between_attempts(url: str) -> None:
    summary = run_gaps(Ledger(make_engine(url)), "gappy")
    assert summary.by_reason() == {
        GapReason.COUNTER_RESET: (1, 0.5),
        GapReason.DEVICE_LOST: (1, 2.0),
        GapReason.AGENT_DOWN: (1, 2.0),
        GapReason.DOWNTIME: (1, 20.0),
    }
    # widened for what no row's band holds: gpu0 at 100 W x 2 s agent down, the run's 3000 J / 40 s x 20 s
    assert summary.widen_j == pytest.approx(100.0 * 2 + 3000.0 / 40 * 20)


def test_run_gaps_with_a_restart_never_loads_the_runs_rows_one_by_one(url: str, monkeypatch) -> None:
    from wattlog.accounting.ledger.reader import RunReader

    def refuse(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("every energy row read into Python: 27 s for a month of a fleet")

    monkeypatch.setattr(RunReader, "energy_rows", refuse)
    summary = run_gaps(Ledger(make_engine(url)), "gappy")  # the database sums them instead
    assert summary.by_reason()[GapReason.DOWNTIME] == (1, 20.0)
    assert summary.widen_j == pytest.approx(100.0 * 2 + 3000.0 / 40 * 20)


def test_the_table_row_names_its_gaps_and_widens_its_band(url: str) -> None:
    ledger = Ledger(make_engine(url))
    table_row = run_row(ledger, ledger.get_run("gappy"), TableOptions(catalog=site_catalog()))
    [note] = [n for n in table_row.notes if n.startswith("gaps:")]
    assert "4 gap(s), 24.5 s" in note and "device lost 1 (2.0 s)" in note
    assert "downtime between attempts 1 (20.0 s)" in note
    assert table_row.energy_band_j is not None
    assert table_row.energy_band_j.hi == pytest.approx(3000.0 + 1700.0)


def test_wattlog_gaps_lists_them(url: str, capsys) -> None:
    assert main(["gaps", "gappy", "--db", url]) == 0
    out = capsys.readouterr().out
    for reason in ("device lost", "counter reset", "agent down", "downtime between attempts"):
        assert reason in out
    assert main(["table", "gappy", "--db", url]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "gaps: 4 gap(s), 24.5 s" in printed
