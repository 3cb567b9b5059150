"""Every reader of a run's band gives the agent's band after a revision, to 0.1 % of the energy.

The run: a load locked to the sensor's 100 ms publication, read by a counter that integrates
true power. Its first rows carry the lock's floor (-50 %); the agent, once the counter is shown
true, gives calibration plus edges and revises those rows. On the old code the totals (table,
exports, report) followed the revision, but `energy_by_hour` and `wattlog windows` did not:
they still showed the early rows' -50 %.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.commands.windows_cli import window_cells
from wattlog.accounting.ledger import Ledger, LedgerSink, RunSpec, make_engine
from wattlog.accounting.ledger.windows import windows
from wattlog.accounting.publishing.exports import rows_csv, rows_json
from wattlog.accounting.publishing.render import TableRow
from wattlog.accounting.publishing.run_table import TableOptions, run_footprint, run_row
from wattlog.clock import FakeClock
from wattlog.records import EnergyFigure, band_of_sum
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.simulated import SensorModel, SimulatedGpu, SimulatedSensor
from wattlog.telemetry.sensors.traces import TrainingTrace
from wattlog.telemetry.windows import Windows

HOUR_S = 3600.0
T0 = 1_700_000_000.0


@dataclass(frozen=True)
class Recorded:
    ledger: Ledger
    run: int
    energy_j: float
    low_j: float  # the agent's band at the end
    high_j: float


def _record(tmp_path: Path, wall_offset_s: float) -> Recorded:
    """91 s of the locked load, flushed every 10 s, with windows [0.5, 40] and [40, 90] s."""
    clock = FakeClock(wall_offset_s=wall_offset_s)
    gpu = SimulatedGpu("GPU-lock", "H100 (simulated)", TrainingTrace.phase_locked(0.1), SensorModel.h100())
    sensor = SimulatedSensor([gpu])
    integ = Integrator(sensor.devices(), host="h", clock=clock)
    sampler = Sampler([sensor], integ, clock=clock)
    spans = Windows(integ, clock, "h")
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=clock)
    run = ledger.start_run("lock", RunSpec(site="jupiter", model="m", role="final")).id
    sink = LedgerSink(ledger, run)
    sampler.run_until(0.5)  # a window marks the devices read so far
    opened = spans.begin("early")
    for k in range(1, 10):
        sampler.run_until(10.0 * k)
        if k == 4:
            spans.end(opened)
            opened = spans.begin("late")
        integ.snapshot()  # a scrape runs lock detection, as the live agent's do
        sink.write(*integ.take_intervals())
        sink.write_revisions(integ.take_revisions())
        sink.write_windows(spans.take())
    spans.end(opened)
    sampler.run_until(91.0)  # the update after the last edge
    sink.write(*integ.take_intervals())
    sink.write_revisions(integ.take_revisions())
    sink.write_windows(spans.take(final=True))
    agent = integ.snapshot()[0]
    assert ledger.band_revisions(run), "the trace must make the agent revise its early rows"
    stored_low_j, _ = band_of_sum(ledger.energy_rows(run))
    assert agent.low_j - stored_low_j > 0.1 * agent.energy_j  # the rows as stored are far wider
    return Recorded(ledger, run, agent.energy_j, agent.low_j, agent.high_j)


def _close(low_j: float, high_j: float, agent: Recorded | EnergyFigure) -> None:
    """The band (low_j, high_j) is the agent's to 0.1 % of the energy on both sides."""
    assert low_j == pytest.approx(agent.low_j, abs=1e-3 * agent.energy_j)
    assert high_j == pytest.approx(agent.high_j, abs=1e-3 * agent.energy_j)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return _record(tmp_path_factory.mktemp("readers"), 1_700_000_000.0)


def _row(r: Recorded) -> TableRow:
    return run_row(r.ledger, r.ledger.get_run(r.run), TableOptions(catalog=site_catalog()))


def test_the_table_and_the_reports_footprint_give_the_agents_band(recorded: Recorded) -> None:
    band = _row(recorded).energy_band_j
    assert band is not None
    _close(band.lo, band.hi, recorded)
    footprint = run_footprint(
        recorded.ledger, recorded.ledger.get_run(recorded.run), TableOptions(catalog=site_catalog())
    )
    assert footprint is not None and footprint.energy_band_j is not None
    _close(footprint.energy_band_j.lo, footprint.energy_band_j.hi, recorded)


def test_the_csv_and_json_exports_give_the_agents_band(recorded: Recorded) -> None:
    row = _row(recorded)
    [line] = list(csv.DictReader(io.StringIO(rows_csv([row]))))
    _close(float(line["energy_band_j_min"]), float(line["energy_band_j_max"]), recorded)
    [item] = json.loads(rows_json([row], []))["rows"]
    _close(item["energy_band_j"]["min"], item["energy_band_j"]["max"], recorded)


def test_energy_by_hour_gives_the_agents_band(recorded: Recorded) -> None:
    [hour] = recorded.ledger.energy_by_hour(recorded.run)  # the 90 s lie in one hour
    _close(hour.low_j, hour.high_j, recorded)


def test_hours_across_an_hour_boundary_add_up_to_the_agents_band(tmp_path: Path) -> None:
    r = _record(tmp_path, 1_800_000_000.0 - 1_800_000_000.0 % HOUR_S - 45.0)  # 45 s in each hour
    hours = r.ledger.energy_by_hour(r.run)
    assert len(hours) == 2
    # a trusted counter's band is calibration and edges, linear in the energy: the hours add up
    _close(sum(h.low_j for h in hours), sum(h.high_j for h in hours), r)


def test_a_window_closed_before_the_evidence_gets_the_band_the_agent_gives_one_after(
    recorded: Recorded,
) -> None:
    # "early" closed at 40 s on the lock's floor (stored: -87 % .. +32 %); the counter was shown true at
    # 60 s; "late" closed at 90 s, with that evidence. Per joule their bands now agree to 0.1 % (both
    # are calibration plus their edges; the agent's whole-run band has no window edges: 0.25 % less).
    early, late = windows(recorded.ledger, recorded.run)
    assert (early.window, late.window) == ("early", "late")
    assert early.low_j / early.energy_j == pytest.approx(late.low_j / late.energy_j, abs=1e-3)
    assert early.high_j / early.energy_j == pytest.approx(late.high_j / late.energy_j, abs=1e-3)
    assert early.low_j / early.energy_j == pytest.approx(recorded.low_j / recorded.energy_j, abs=5e-3)
    cells = window_cells([early])[0]
    low_wh, high_wh = (float(x) for x in cells[6].split("-"))
    assert (low_wh, high_wh) == pytest.approx((early.low_j / HOUR_S, early.high_j / HOUR_S), abs=1e-4)


def test_the_audit_bundle_carries_the_revisions_and_its_replay_gives_the_agents_band(
    recorded: Recorded, tmp_path: Path
) -> None:
    from wattlog.accounting.publishing.audit.bundle import build_bundle, verify_bundle

    options = TableOptions(catalog=site_catalog())
    bundle = build_bundle(recorded.ledger, recorded.run, options, tmp_path / "run.tar.gz")
    result = verify_bundle(bundle)
    assert result.ok and result.row is not None
    band = result.row.energy_band_j  # the row recomputed from the bundle alone
    assert band is not None
    _close(band.lo, band.hi, recorded)


def _session(ledger: Ledger, run: int, host: str, trace: TrainingTrace, wall_offset_s: float) -> EnergyFigure:
    """One agent's 90 s on one GPU, flushed into `run` every 10 s with its revisions; its final figure."""
    clock = FakeClock(wall_offset_s=wall_offset_s)
    sensor = SimulatedSensor([SimulatedGpu(f"GPU-{host}", "H100 (simulated)", trace, SensorModel.h100())])
    integ = Integrator(sensor.devices(), host=host, clock=clock)
    sampler = Sampler([sensor], integ, clock=clock)
    sink = LedgerSink(ledger, run)
    for k in range(1, 10):
        sampler.run_until(10.0 * k)
        integ.snapshot()
        sink.write(*integ.take_intervals())
        sink.write_revisions(integ.take_revisions())
    return integ.snapshot()[0].figure


def _agents_band(figures: list[EnergyFigure]) -> EnergyFigure:
    """The agents' band of the sum of their figures (their sampling parts independent: in quadrature)."""
    total = figures[0]
    for figure in figures[1:]:
        total = total + figure  # EnergyFigure.__add__: the ledger's summed band
    return total


def _table_band(ledger: Ledger, name: str) -> tuple[float, float]:
    band = run_row(ledger, ledger.get_run(name), TableOptions(catalog=site_catalog())).energy_band_j
    assert band is not None
    return band.lo, band.hi


def test_a_run_resumed_after_a_restart_shows_both_agents_band_in_the_table(tmp_path: Path) -> None:
    clock = FakeClock(wall_offset_s=T0)
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=clock)
    run = ledger.start_run("resumed", RunSpec(site="jupiter", model="m", role="final")).id
    first = _session(ledger, run, "n0", TrainingTrace.phase_locked(0.1), T0)
    # resumed at once: downtime between attempts is unmeasured, and the table widens the band
    # above by its estimate (gaps.py, said in a note): 210 s of it added 43,575 J here
    clock.advance(90.0)
    ledger.start_run("resumed", resume=True)  # a new agent: its own evidence, its own revisions
    second = _session(ledger, run, "n0", TrainingTrace.phase_locked(0.1), T0 + 90.0)
    assert ledger.get_run(run).restarts == 1
    assert len({r.end_s for r in ledger.band_revisions(run)}) >= 2  # each agent revised its early rows
    _close(*_table_band(ledger, "resumed"), _agents_band([first, second]))


def test_a_two_node_run_shows_both_agents_band_in_the_table(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("two-nodes", RunSpec(site="jupiter", model="m", role="final")).id
    figures = [
        _session(ledger, run, "n0", TrainingTrace.phase_locked(0.1), T0),
        _session(ledger, run, "n1", TrainingTrace.generate(1, 90.0), T0),
    ]
    assert {r.host for r in ledger.band_revisions(run)} >= {"n0"}
    _close(*_table_band(ledger, "two-nodes"), _agents_band(figures))
