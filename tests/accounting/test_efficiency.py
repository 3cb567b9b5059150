"""J per token, J per 10^18 FLOP and mean GPU power / TDP beside Table 19: table notes, JSON, CSV."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.devices import device_catalog
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.jobs import RankReport, report_rank_progress
from wattlog.accounting.ledger.runs import RunSpec
from wattlog.accounting.ledger.views import RankInfo
from wattlog.accounting.publishing.efficiency import Efficiency
from wattlog.accounting.publishing.exports import rows_csv, rows_json
from wattlog.accounting.publishing.job_speed import efficiency_of
from wattlog.accounting.publishing.render import footnotes
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.records import EnergyInterval, Kind, Source

START_S = 1_764_000_000.0
HOUR_S = 3600.0


def _rank(rank: int, tokens: float, flops: float | None) -> RankInfo:
    return RankInfo(
        run_id=1, rank=rank, host="n1", local_rank=rank, tokens_total=tokens, step=10,
        start_s=START_S, updated_s=START_S + HOUR_S, flops_per_token=flops, peak_flops=None,
    )  # fmt: skip


def test_every_ranks_tokens_and_flops_divide_the_jobs_energy() -> None:
    ranks = [_rank(0, 600.0, 6e9), _rank(1, 400.0, 6e9)]
    h100_s = 2 * HOUR_S
    figures = efficiency_of(ranks, 500.0, (2 * 630.0 * HOUR_S, h100_s), "H100")
    assert figures.j_per_token == pytest.approx(0.5)  # 500 J / (600 + 400) tokens: not one rank's
    assert figures.j_per_eflop == pytest.approx(500.0 / (1000 * 6e9 / 1e18))
    assert figures.avg_power_w == pytest.approx(630.0)
    h100, _ = device_catalog().get("H100")
    assert figures.tdp_w == h100.power_limit_w and figures.tdp_source
    assert figures.power_of_tdp == pytest.approx(630.0 / (h100.power_limit_w or 0))
    assert f"= 90 % of TDP {h100.power_limit_w:g} W (H100;" in figures.line()


def test_unknown_parts_are_dashes_and_nulls_never_zero_or_an_assumed_board() -> None:
    no_flops = efficiency_of([_rank(0, 1000.0, None)], 500.0, (0.0, 0.0), "")
    assert (no_flops.j_per_token, no_flops.j_per_eflop, no_flops.avg_power_w) == (0.5, None, None)
    assert no_flops.tdp_w is None  # no device model recorded: the catalog's default is not this board
    # no GPU power: no "- = - of TDP" after it
    assert no_flops.line() == "Energy per token 0.500 J, per 10^18 FLOP -, average GPU power -"
    unknown_board = efficiency_of([_rank(0, 1000.0, None)], 500.0, (630.0, 1.0), "")
    assert unknown_board.line().endswith("average GPU power 630 W = - of TDP (no TDP for this board)")
    nothing = efficiency_of([], None, (0.0, 0.0), "H100")
    assert not nothing.known and nothing.fields()["j_per_token"] is None
    assert efficiency_of([_rank(0, 0.0, 6e9)], 500.0, (0.0, 0.0), "").j_per_token is None


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(make_engine(f"sqlite:///{tmp_path / 'ledger.db'}"))


def _record(ledger: Ledger, name: str, tokens: float | None) -> None:
    ledger.start_run(name, RunSpec(site="jupiter", host="n1", device_model="H100"))
    gpus = [
        EnergyInterval.of(
            "n1", f"GPU-{i}", Kind.GPU, Source.COUNTER, START_S, START_S + HOUR_S, *[630.0 * HOUR_S] * 3
        )
        for i in range(2)
    ]
    ledger.record_intervals(name, gpus)
    if tokens is not None:
        report_rank_progress(ledger, name, 0, RankReport("n1", 0, tokens, 10, START_S, flops_per_token=6e9))


def test_a_runs_row_carries_them_into_the_notes_json_and_csv(ledger: Ledger) -> None:
    _record(ledger, "measured", tokens=1e6)
    _record(ledger, "no-tokens", tokens=None)
    options = TableOptions(catalog=site_catalog())
    rows = [run_row(ledger, ledger.get_run(name), options) for name in ("measured", "no-tokens")]
    energy_j = 2 * 630.0 * HOUR_S
    assert (
        rows[0].efficiency
        == Efficiency(
            energy_j / 1e6, energy_j / (1e6 * 6e9 / 1e18), 630.0, 700.0, rows[0].efficiency.tdp_source, "H100"
        )
        and rows[0].efficiency.tdp_source
    )  # type: ignore[union-attr]
    notes = footnotes(rows)
    # in the energy columns' units, not "J per 10^18 FLOP 7.56x10^8"
    line = (
        "Energy per token 4.54 J, per 10^18 FLOP 210 kWh, average GPU power 630 W = 90 % of TDP 700 W (H100; "
    )
    assert any(n.startswith("measured (") and line in n for n in notes)
    assert any(
        n.startswith("no-tokens (") and ": Energy per token -, per 10^18 FLOP -, average GPU power 630 W" in n
        for n in notes
    )
    document = json.loads(rows_json(rows, []))
    assert document["rows"][0]["efficiency"]["j_per_token"] == pytest.approx(4.536)
    assert document["rows"][0]["efficiency"]["power_of_tdp"] == pytest.approx(0.9)
    assert document["rows"][1]["efficiency"]["j_per_token"] is None  # unknown is null, never 0
    table = list(csv.DictReader(io.StringIO(rows_csv(rows))))
    assert float(table[0]["j_per_1e18_flop"]) == pytest.approx(756_000_000.0)
    assert table[1]["j_per_token"] == "" and float(table[1]["avg_power_w_per_gpu"]) == pytest.approx(630.0)


def test_a_killed_runs_lease_gap_after_its_last_row_leaves_its_gpu_seconds_alone(tmp_path: Path) -> None:
    """A run killed after 100 s of 650 W on 8 GPUs, its lease lapsing 60 s later: 650 W, never above TDP.

    The reaper records a gap per GPU from its last row to the lease's end; that stretch was never
    in the rows' span, so taking it from the span's GPU-seconds read 1,590 W = 227 % of TDP (issue 38).
    """
    from wattlog.accounting.ledger.lease import reap_lost, renew_lease
    from wattlog.clock import FakeClock

    clock = FakeClock(wall_offset_s=START_S)
    killed = Ledger(make_engine(f"sqlite:///{tmp_path / 'killed.db'}"), clock=clock)
    killed.start_run("killed", RunSpec(site="jupiter", host="n1", device_model="H100"))
    for _ in range(100):
        start_s = clock.wall()
        clock.advance(1.0)
        rows = [
            EnergyInterval.of("n1", f"GPU-{i}", Kind.GPU, Source.COUNTER, start_s, clock.wall(), *[650.0] * 3)
            for i in range(8)
        ]
        killed.record_intervals("killed", rows)
        renew_lease(killed, "killed", 60.0)
    clock.advance(61.0)  # killed: no flush, no renewal; the lease lapses and a reader reaps it
    _, lost = reap_lost(killed)
    assert [run.name for run in lost] == ["killed"]
    row = run_row(killed, killed.get_run("killed"), TableOptions(catalog=site_catalog()))
    assert row.efficiency is not None and row.efficiency.avg_power_w == pytest.approx(650.0)
    assert row.efficiency.power_of_tdp is not None and row.efficiency.power_of_tdp <= 1.0
    assert "average GPU power 650 W = 93 % of TDP 700 W" in row.efficiency.line()


@pytest.mark.parametrize("gaps", [((50.0, 60.0), (55.0, 70.0)), ((-20.0, 5.0),), ((95.0, 130.0),)])
def test_gpu_seconds_take_only_the_gaps_inside_the_span_once(gaps: tuple[tuple[float, float], ...]) -> None:
    """Overlapping gaps of one GPU count once; the parts of a gap outside the rows' span not at all."""
    from wattlog.accounting.ledger.views import EnergyTotal
    from wattlog.accounting.publishing.gaps import GapSummary, RunGap
    from wattlog.accounting.publishing.run_table import RunRead
    from wattlog.gap_reasons import GapReason
    from wattlog.records import EnergyFigure

    total = EnergyTotal(
        figure=EnergyFigure(Kind.GPU, Source.COUNTER, 1.0, 1.0, 1.0), host="n1", device="GPU-0"
    )
    summary = GapSummary(
        tuple(RunGap("GPU-0", "n1", START_S + a, START_S + b, GapReason.AGENT_DOWN, "") for a, b in gaps), 0.0
    )
    read = RunRead([total], None, None, summary, span=(START_S, START_S + 100.0))  # type: ignore[arg-type]
    inside = {((50.0, 60.0), (55.0, 70.0)): 20.0, ((-20.0, 5.0),): 5.0, ((95.0, 130.0),): 5.0}[gaps]
    assert read.gpu_seconds() == pytest.approx(100.0 - inside)
