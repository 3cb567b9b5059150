"""The validity gate: a run fit to publish, or NOT VALID with each reason; strict refuses it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from wattlog.accounting.carbon.intensity.base import HourlySeries
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.accounting.publishing.validity import ValidityLimits, counter_check_payload
from wattlog.cli import main
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError
from wattlog.events import EventKind
from wattlog.records import EnergyInterval, Gap, Kind, Source

T0 = 1_800_000_000.0


def _row(
    device: str, source: Source = Source.COUNTER, end: float = 1000.0, start: float = 0.0
) -> EnergyInterval:
    return EnergyInterval.of("n", device, Kind.GPU, source, T0 + start, T0 + end, 7e5, 6.9e5, 7.1e5)


def _check(ledger: Ledger, run_id: int, device: str, counter_j: float = 7000.0) -> None:
    """The counter_check event an agent's session records: its counter beside power x time (10 s)."""
    payload = counter_check_payload("n", device, counter_j, 7000.0, 10.0)
    ledger.record_event(run_id, EventKind.COUNTER_CHECK, payload=payload)


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=FakeClock(wall_offset_s=T0))
    runs = {
        "clean": ([_row("gpu0"), _row("gpu1")], []),
        "simulated": ([_row("gpu0", Source.SIMULATED)], []),
        "lost": (
            [_row("gpu0"), _row("gpu1", end=600.0)],
            [Gap("n", "gpu1", T0 + 600, T0 + 1000, "lost: gone")],
        ),
        "gappy": ([_row("gpu0")], [Gap("n", "gpu0", T0 + 100, T0 + 130, "no readings for 30 s")]),
        "running": ([_row("gpu0")], []),
        "unchecked": ([_row("gpu0")], []),
        "counter_off": ([_row("gpu0")], []),
        "loose_window": ([_row("gpu0", start=-5.0, end=1004.0)], []),
        "late_device": ([_row("gpu0"), _row("gpu1", start=120.0)], []),
    }
    for name, (rows, gaps) in runs.items():
        run = ledger.start_run(name, RunSpec(site="jupiter"))
        ledger.record_intervals(run.id, rows, gaps)
        for device in sorted({r.device for r in rows}) if name != "unchecked" else ():
            _check(ledger, run.id, device, 7000.0 * (40 if name == "counter_off" else 1))
        if name != "running":
            ledger.end_run(run.id, end_s=T0 + 1000)
    return ledger


GATE = TableOptions(catalog=site_catalog(), validity=ValidityLimits())


def _verdict(ledger: Ledger, name: str) -> str:
    [note] = [n for n in run_row(ledger, ledger.get_run(name), GATE).notes if "VALID" in n or "valid" in n]
    return note


def test_a_clean_finished_run_is_valid_and_strict_shows_it(ledger: Ledger) -> None:
    assert _verdict(ledger, "clean") == "measurement valid"
    strict = TableOptions(catalog=site_catalog(), strict=True)
    assert run_row(ledger, ledger.get_run("clean"), strict).energy_j is not None


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("simulated", "1 simulated device(s): not a measurement"),
        ("lost", "device(s) lost during the run: gpu1"),
        ("gappy", "gaps 30.0 device-s = 3.0% of the run's device-seconds (limit 1.0%)"),
        ("running", "run running, not finished"),
        ("unchecked", "energy counter(s) not checked at start-up against power x time: gpu0"),
        (
            "counter_off",
            "energy counter(s) outside 0.1-10x of power x time at start-up, not trusted but still counted: "
            "gpu0 (2.8e+05 J vs 7000 J from power x time)",
        ),
        (
            "loose_window",
            "measurement window reaches 5.0 s before the run's start and 4.0 s past its end "
            "(more than one sensor update, 1 s)",
        ),
        (
            "late_device",
            "device(s) not measured for the whole run (limit 30 s at each end): gpu1 (+120.0 s to +0.0 s)",
        ),
    ],
)
def test_each_reason_marks_the_run_and_strict_refuses_it(ledger: Ledger, name: str, reason: str) -> None:
    note = _verdict(ledger, name)
    assert note.startswith("NOT VALID: ") and reason in note
    with pytest.raises(ConfigError, match=f"run '{name}' refused \\(strict\\): NOT VALID"):
        run_row(ledger, ledger.get_run(name), TableOptions(catalog=site_catalog(), strict=True))


def test_the_gap_limit_is_a_setting_and_the_gate_is_on_unless_turned_off(ledger: Ledger) -> None:
    loose = TableOptions(catalog=site_catalog(), validity=ValidityLimits(max_gap_fraction=0.05))
    assert "measurement valid" in run_row(ledger, ledger.get_run("gappy"), loose).notes
    # on by default: every path that builds a row (table, SLURM card, run summary, report) is gated;
    # before, each had to ask, and the SLURM card and the run summary did not
    plain = run_row(ledger, ledger.get_run("simulated"), TableOptions(catalog=site_catalog()))
    assert plain.validity and [n for n in plain.notes if "NOT VALID" in n]
    off = run_row(ledger, ledger.get_run("simulated"), TableOptions(catalog=site_catalog(), validity=None))
    assert off.validity is None and not [n for n in off.notes if "VALID" in n]
    with pytest.raises(ConfigError, match="max_gap_fraction"):
        ValidityLimits(max_gap_fraction=1.5)


def test_an_intensity_without_the_runs_hours_marks_it_and_the_row_keeps_its_energy(ledger: Ledger) -> None:
    hour = int(T0 // 3600) * 3600
    covered = HourlySeries({hour: 0.3}, origin="grid.csv")
    lacking = HourlySeries({hour - 3600: 0.3}, origin="grid.csv")
    run = ledger.get_run("clean")
    gated = TableOptions(catalog=site_catalog(), validity=ValidityLimits(), intensity=covered)
    assert run_row(ledger, run, gated).validity == ()
    row = run_row(ledger, run, replace(gated, intensity=lacking))
    assert row.validity == ("intensity missing for 1 hour(s) with energy (first: 2027-01-15T08:00Z)",)
    assert row.energy_j is not None and row.co2_t is None  # energy shown; CO2 "-", never 0
    assert "the intensity lacks 1 hour(s) with energy: CO2 and water not computed" in row.notes
    with pytest.raises(ConfigError, match="refused \\(strict\\): NOT VALID: intensity missing"):
        run_row(ledger, run, TableOptions(catalog=site_catalog(), strict=True, intensity=lacking))


def test_wattlog_table_strict_prints_a_valid_run_and_refuses_an_invalid_one(tmp_path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    ledger = Ledger(make_engine(url), clock=FakeClock(wall_offset_s=T0))
    for name, source in (("clean", Source.COUNTER), ("simulated", Source.SIMULATED)):
        run = ledger.start_run(name, RunSpec(site="jupiter"))
        ledger.record_intervals(run.id, [_row("gpu0", source)])
        _check(ledger, run.id, "gpu0")
        ledger.end_run(run.id, end_s=T0 + 1000)
    ledger.engine.dispose()
    assert main(["table", "clean", "--db", url, "--strict"]) == 0
    assert "measurement valid" in " ".join(capsys.readouterr().out.split())
    assert main(["table", "simulated", "--db", url]) == 0  # without --strict: shown as before
    assert main(["table", "simulated", "--db", url, "--strict"]) != 0
    refused = " ".join(capsys.readouterr().err.split())
    assert "refused (strict): NOT VALID: 1 simulated device(s): not a measurement" in refused


def test_a_fleets_unchecked_counters_are_named_by_host_once_each_and_counted(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'f.db'}"), clock=FakeClock(wall_offset_s=T0))
    run = ledger.start_run("fleet", RunSpec(site="jupiter"))
    rows = [
        EnergyInterval.of(
            f"node{n:03d}", "node", Kind.NODE, Source.COUNTER, T0 + s, T0 + s + 500, 1e6, 9.9e5, 1.01e6
        )
        for n in range(128)
        for s in (0.0, 500.0)
    ]
    ledger.record_intervals(run.id, rows)
    ledger.end_run(run.id, end_s=T0 + 1000)
    # before: "not checked at start-up against power x time: node, node, node, ..." (256 times)
    assert _verdict(ledger, "fleet") == (
        "NOT VALID: energy counter(s) not checked at start-up against power x time: "
        "node000/node, node001/node, node002/node, node003/node, node004/node and 123 more"
    )


def test_a_counter_swapped_for_power_x_time_keeps_the_run_valid_and_the_verdict_notes_it(
    ledger: Ledger,
) -> None:
    run = ledger.start_run("swapped", RunSpec(site="jupiter"))
    ledger.record_intervals(run.id, [_row("gpu0", Source.SAMPLED), _row("gpu1")], [])
    _check(ledger, run.id, "gpu1")
    payload = counter_check_payload("n", "gpu0", 7000.0 * 20, 7000.0, 10.0, swapped=True)
    ledger.record_event(run.id, EventKind.COUNTER_CHECK, payload=payload)
    ledger.end_run(run.id, end_s=T0 + 1000)
    row = run_row(ledger, ledger.get_run("swapped"), GATE)
    assert row.validity == ()
    assert _verdict(ledger, "swapped") == (
        "measurement valid; energy counter(s) outside 0.1-10x of power x time at start-up swapped for "
        "power x time (figure from power readings, sampled): gpu0"
    )
