"""Fault: bad numbers on the command line, a ledger from a newer wattlog, a corrupt ledger.

On the old code these gave tracebacks (a 104-line Alembic one for the newer
schema), ran forever (`--seconds inf`), or went unnoticed (garbage inside the
ledger file; an energy outside its own band printed by `wattlog table`).
Each must be one line on stderr naming what is wrong, exit 2.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.cli import main
from wattlog.records import EnergyInterval, Kind, Source


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:"), err
    return err[0]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["demo", "--seconds", "nan"], "--seconds must be a finite number"),
        (["demo", "--seconds", "inf"], "--seconds must be a finite number"),
        (["demo", "--seconds", "1e300"], "--seconds must be > 0 and <= 86400"),
        (["agent", "--seconds", "nan", "--port", "-1"], "--seconds must be a finite number"),
        (["agent", "--flush-s", "inf", "--seconds", "1", "--port", "-1"], "--flush-s must be a finite"),
        (["agent", "--period-ms", "0", "--seconds", "1", "--port", "-1"], "--period-ms must be > 0"),
        (["run", "--flush-s", "inf", "--", "true"], "--flush-s must be a finite number"),
        (["compact", "--older-than-days", "inf"], "--older-than-days must be a finite number"),
        (["health-check", "--size", "-5"], "--size must be >= 1"),
        (["health-check", "--min-fraction", "nan"], "--min-fraction must be a finite number"),
        (["webhook", "serve", "--port", "99999"], "--port must be >= 0 and <= 65535"),
        (["agent", "--simulate", "99999999", "--seconds", "1", "--port", "-1"], "--simulate must be"),
        (["sensors", "--simulate", "5000"], "--simulate must be >= 0 and <= 1024"),
        (["demo", "--batch-size", "10000000"], "--batch-size must be >= 1 and <= 65536"),
        (["webhook", "send", "--run", "x", "--attempts", "0", "--url", "http://127.0.0.1:9"], "--attempts"),
    ],
)
def test_a_bad_number_is_one_line_and_exit_2(
    argv: list[str], says: str, capsys, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may be written where the tests run
    assert main(argv) == 2
    assert says in one_error_line(capsys)
    assert not list(tmp_path.iterdir())  # refused before anything started


def test_a_binary_intensity_file_is_one_line(capsys, tmp_path) -> None:
    binary = tmp_path / "grid.csv"
    binary.write_bytes(bytes(range(256)) * 4)
    assert main(["table", "--reference", "--intensity", str(binary)]) == 2
    assert f"{binary} is not a text file" in one_error_line(capsys)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(days=st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([math.nan, -1.0, 1e308]))
def test_compact_takes_any_number_without_a_traceback(days: float, tmp_path_factory, capsys) -> None:
    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'l.db'}"
    make_engine(url).dispose()
    code = main(["compact", "--older-than-days", repr(days), "--db", url])
    out = capsys.readouterr()
    if math.isfinite(days) and 0 <= days <= 100 * 365:
        assert code == 0 and "raw rows folded" in out.out
    else:
        assert code == 2 and len(out.err.strip().splitlines()) == 1 and "--older-than-days" in out.err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(port=st.integers().filter(lambda p: not 0 <= p <= 65535))
def test_webhook_port_out_of_range_is_one_line(port: int, capsys) -> None:
    assert main(["webhook", "serve", "--port", str(port)]) == 2
    assert "--port must be" in capsys.readouterr().err


def ledger_with_rows(path: Path) -> str:
    url = f"sqlite:///{path}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r", RunSpec(site="jupiter"))
    rows = [
        EnergyInterval.of(
            "n", f"gpu{i % 4}", Kind.GPU, Source.COUNTER, 10.0 * i, 10.0 * (i + 1), 5e3, 4.9e3, 5.1e3
        )
        for i in range(400)
    ]
    ledger.record_intervals(run.id, rows)
    ledger.engine.dispose()
    return url


def test_a_ledger_from_a_newer_wattlog_is_one_line(tmp_path, capsys) -> None:
    url = ledger_with_rows(tmp_path / "new.db")
    with sqlite3.connect(tmp_path / "new.db") as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0099'")
    assert main(["table", "--db", url]) == 2
    line = one_error_line(capsys)
    assert str(tmp_path / "new.db") in line and "newer" in line and "upgrade wattlog" in line


def test_a_file_that_is_no_ledger_is_one_line(tmp_path, capsys) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00garbage" * 512)
    assert main(["table", "--db", f"sqlite:///{junk}"]) == 2
    line = one_error_line(capsys)
    assert str(junk) in line and "backup" in line


def test_garbage_inside_the_ledger_is_found_by_compact(tmp_path, capsys) -> None:
    path = tmp_path / "hurt.db"
    url = ledger_with_rows(path)
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        # The energy rows' own root page: a page in use whatever other tables the schema gains
        # (the middle of the file can be a free page, which no check reads).
        (root,) = connection.execute(
            "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = 'energy_record'"
        ).fetchone()
    data = bytearray(path.read_bytes())
    start = (root - 1) * page_size
    data[start + 8 : start + page_size] = b"\xa5" * (page_size - 8)  # one page of garbage
    path.write_bytes(bytes(data))
    assert main(["compact", "--older-than-days", "0", "--db", url]) == 2
    line = one_error_line(capsys)
    assert str(path) in line and ("damaged" in line or "not a readable" in line or "cannot be read" in line)


def test_table_refuses_an_energy_outside_its_band(tmp_path, capsys) -> None:
    path = tmp_path / "odd.db"
    url = ledger_with_rows(path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE energy_record SET energy_j = 9e3 WHERE id = 7")
        connection.execute("UPDATE energy_total SET energy_j = energy_j + 4e3 WHERE device = 'gpu2'")
    assert main(["table", "--db", url]) == 2
    line = one_error_line(capsys)
    assert "impossible rows" in line and "outside its band" in line and "9000.0 J" in line


def test_table_checks_the_runs_it_shows_not_every_run(tmp_path, capsys) -> None:
    path = tmp_path / "two.db"
    url = ledger_with_rows(path)
    ledger = Ledger(make_engine(url))
    ledger.start_run("other", RunSpec(site="jupiter"))
    ledger.record_intervals(
        "other", [EnergyInterval.of("m", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 10.0, 5e3, 4.9e3, 5.1e3)]
    )
    ledger.engine.dispose()
    with sqlite3.connect(path) as connection:  # run "other" gets an impossible row
        connection.execute("UPDATE energy_record SET energy_j = 9e3 WHERE host = 'm'")
    assert main(["table", "r", "--db", url]) == 0  # before: refused for another run's row
    capsys.readouterr()
    assert main(["table", "other", "--db", url]) == 2
    line = one_error_line(capsys)
    assert "impossible rows" in line and "9000.0 J" in line


def test_wattlog_check_finds_totals_that_disagree_with_their_rows_and_repairs_them(tmp_path, capsys) -> None:
    """A table shows the rollups kept beside the rows (0016, 0017); a hand edit or a partial restore
    that leaves them apart is found by `wattlog check` and recomputed with --repair."""
    path = tmp_path / "drift.db"
    url = ledger_with_rows(path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE energy_total SET energy_j = energy_j + 50 WHERE device = 'gpu1'")
        connection.execute("UPDATE energy_total SET last_end_s = 99999 WHERE device = 'gpu2'")
        first_hour = connection.execute("SELECT min(hour) FROM energy_hour").fetchone()[0]
        connection.execute("DELETE FROM energy_hour WHERE hour = ?", (first_hour,))
    assert main(["check", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "device total n/gpu1/gpu/counter: kept 500050.0 J, rows sum to 500000.0 J" in err
    assert "device total n/gpu2/gpu/counter: kept span [20.0, 99999.0], rows span [20.0, 3990.0]" in err
    assert f"hourly sum {first_hour}/n/gpu/counter: rows, but not kept" in err
    assert err.strip().splitlines()[-1].startswith("error:") and "`wattlog check --repair`" in err
    assert main(["check", "--db", url, "--repair"]) == 0
    assert "totals and hours recomputed from its rows" in capsys.readouterr().err
    assert main(["check", "--db", url]) == 0
    assert "every total and hour agrees with its rows" in capsys.readouterr().out
    ledger = Ledger(make_engine(url))
    assert sum(t.energy_j for t in ledger.energy_totals("r")) == 400 * 5e3
    ledger.engine.dispose()


def test_wattlog_check_reads_the_whole_ledger(tmp_path, capsys) -> None:
    path = tmp_path / "whole.db"
    url = ledger_with_rows(path)
    assert main(["check", "--db", url]) == 0
    assert "no damage" in capsys.readouterr().out
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE energy_record SET energy_j = 9e3 WHERE id = 7")
    assert main(["check", "--db", url]) == 2
    assert "impossible rows" in one_error_line(capsys)
