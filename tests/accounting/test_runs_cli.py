"""`wattlog runs`: list, relabel, rename and delete runs; runs are development unless marked final."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from wattlog.accounting.ledger import Ledger, Role, RunSpec, make_engine
from wattlog.accounting.ledger.models import SQLModel
from wattlog.cli import app, main
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Gap, Kind, Source

H0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A final run with 7.2 kJ (2 Wh), a run started without a role, and one with no energy at all."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(make_engine(url), clock=FakeClock(wall_offset_s=H0))
    final = ledger.start_run("good", RunSpec(role="final", site="jupiter", stage="pretraining"))
    row = EnergyInterval.of("n0", "GPU-0", Kind.GPU, Source.COUNTER, H0, H0 + 10, 7200.0, 7000.0, 7400.0)
    ledger.record_intervals(final.id, [row])
    typo = ledger.start_run("typo")
    ledger.record_intervals(typo.id, [row], [Gap("n0", "GPU-0", H0 + 10, H0 + 20, "sensor_lost")])
    ledger.record_event(typo.id, "health_check")
    ledger.start_run("empty", RunSpec(project="other"))
    ledger.engine.dispose()
    return url


def rows_of(url: str) -> dict[str, int]:
    engine = make_engine(url, create=False)
    try:
        with engine.connect() as connection:
            return {
                table.name: connection.execute(select(func.count()).select_from(table)).scalar_one()
                for table in SQLModel.metadata.sorted_tables
            }
    finally:
        engine.dispose()


def test_a_run_is_development_unless_marked_final(url: str) -> None:
    engine = make_engine(url, create=False)
    assert Ledger(engine).get_run("typo").role == Role.DEVELOPMENT  # before: final, a Table 19 row
    engine.dispose()


def test_the_list_shows_status_role_stage_energy_site_start(url: str, capsys) -> None:
    assert main(["runs", "--db", url, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    good = next(line for line in out.splitlines() if line.startswith("| good"))
    cells = [c.strip() for c in good.strip("|").split("|")]
    assert cells == ["good", "running", "final", "pretraining", "2.00 Wh", "jupiter", "2026-01-01 00:00:00"]
    empty = next(line for line in out.splitlines() if line.startswith("| empty"))
    assert [c.strip() for c in empty.strip("|").split("|")][3:6] == ["-", "-", "-"]  # never 0
    assert main(["runs", "list", "--db", url, "--project", "other", "--format", "csv"]) == 0
    listed = capsys.readouterr().out
    assert "empty" in listed and "good" not in listed


def test_table_shows_final_runs_and_names_the_others(url: str, capsys) -> None:
    assert main(["table", "--db", url, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "(good, final)" in out and "typo" not in out
    assert "2 development run(s) not shown" in out
    assert main(["table", "typo", "--db", url, "--format", "markdown"]) == 0  # named: shown
    assert "(typo, development)" in capsys.readouterr().out


def test_relabel_makes_a_run_a_table19_row(url: str, capsys) -> None:
    assert main(["runs", "relabel", "typo", "--role", "final", "--db", url]) == 0
    assert "role development -> final" in capsys.readouterr().out
    assert main(["table", "--db", url, "--format", "markdown"]) == 0
    assert "(typo, final)" in capsys.readouterr().out
    assert main(["runs", "relabel", "typo", "--role", "nonsense", "--db", url]) == 2


def test_no_final_run_is_one_line_naming_the_fix(url: str, capsys) -> None:
    assert main(["runs", "relabel", "good", "--role", "ablation", "--db", url]) == 0
    capsys.readouterr()
    assert main(["table", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "no final runs" in err and "wattlog runs relabel NAME --role final" in err


def test_rename_keeps_the_rows_and_refuses_a_taken_name(url: str, capsys) -> None:
    before = rows_of(url)
    assert main(["runs", "rename", "typo", "second-try", "--db", url]) == 0
    assert rows_of(url) == before
    assert main(["runs", "rename", "second-try", "good", "--db", url]) == 2
    assert "exists already" in capsys.readouterr().err
    assert main(["runs", "rename", "nosuch", "x", "--db", url]) == 2


def test_delete_asks_then_removes_the_run_with_its_rows(url: str) -> None:
    before = rows_of(url)
    runner = CliRunner()
    kept = runner.invoke(app, ["runs", "delete", "typo", "--db", url], input="n\n")
    assert "kept" in kept.output and rows_of(url) == before
    done = runner.invoke(app, ["runs", "delete", "typo", "--db", url], input="y\n")
    assert done.exit_code == 0, done.output
    assert "deleted with" in done.output
    after = rows_of(url)
    assert after["run"] == before["run"] - 1
    for table in ("energy_record", "energy_total", "gap", "event"):
        assert after[table] < before[table], table
    assert main(["runs", "delete", "good", "--yes", "--db", url]) == 0
    assert rows_of(url)["energy_record"] == 0


def test_options_before_a_subcommand_are_refused_not_dropped(url: str, capsys) -> None:
    # `--db URL relabel` would otherwise relabel a run of the default ledger (or fail to find it there).
    assert main(["runs", "--db", url, "relabel", "typo", "--role", "final"]) == 2
    assert "after the subcommand" in capsys.readouterr().err


def test_runs_never_creates_a_ledger(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    assert main(["runs", "--db", f"sqlite:///{missing}"]) == 2
    assert not missing.exists()


def test_delete_without_a_terminal_or_yes_says_it_needs_confirmation_in_one_line(url: str) -> None:
    """In a script (stdin not a terminal, nothing to read) it exited 130 and said nothing."""
    before = rows_of(url)
    done = subprocess.run(
        [sys.executable, "-m", "wattlog", "runs", "delete", "typo", "--db", url],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    assert done.returncode == 2, done
    [line] = done.stderr.splitlines()
    assert "needs a confirmation" in line and "add --yes" in line and "run typo kept" in line
    assert rows_of(url) == before


def test_a_run_that_does_not_exist_points_to_the_command_that_lists_every_run(url: str, capsys) -> None:
    assert main(["runs", "delete", "nosuch", "--yes", "--db", url]) == 2
    err = capsys.readouterr().err
    assert (
        "`wattlog runs` lists every run" in err and "wattlog table" not in err
    )  # the table hides development runs
