"""What a Tracker used from Python prints when its run ends: the same few lines as `wattlog run`."""

from __future__ import annotations

from typing import Any

import pytest

from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.tracker import Tracker


def _run(name: str, db_url: str, sim: dict[str, Any], **settings: Any) -> Tracker:
    with Tracker(name, db=db_url, log_every=2, **sim, **settings) as tracker:
        for _ in range(4):
            tracker.step(loss=1.0, tokens=64)
    return tracker


def test_a_tracker_ends_with_the_runs_closing_lines(
    db_url: str, sim: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    _run("py-run", db_url, sim, site="jupiter")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5  # before: nothing at all
    assert lines[0].startswith("Energy: ") and "(band " in lines[0] and "source: simulated" in lines[0]
    # the gate's verdict where a run ends, not only in its table (before: simulated, and nothing said)
    assert lines[1] == "NOT VALID to publish: 2 simulated device(s): not a measurement"
    assert lines[2].startswith("CO2 ") and "water " in lines[2] and "(site jupiter)" in lines[2]
    assert lines[3].startswith("Ledger: ")
    assert lines[4] == f"Full table beside Table 19: wattlog table py-run --reference --db {db_url}"


def test_without_a_site_the_tracker_says_what_to_pass(
    db_url: str, sim: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    _run("no-site", db_url, sim, site="")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Energy: ") and "source: simulated" in lines[0]
    assert lines[1].startswith("NOT VALID to publish: ")
    assert lines[2].startswith("CO2, water: no site given; pass site=...")


def test_quiet_silences_and_table_prints_the_run_beside_table_19(
    db_url: str, sim: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    _run("quiet", db_url, sim, site="jupiter", quiet=True)
    assert capsys.readouterr().out == ""
    fresh = [SimulatedSensor(simulated_gpus(1))]  # the first run closed its sensors
    _run("full", db_url, {**sim, "sensors": fresh}, site="jupiter", table=True)
    out = capsys.readouterr().out
    assert "OLMo 2 7B" in out and "Where the energy of full went" in out
