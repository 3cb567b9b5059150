"""The trainer's commands through the real CLI: health-check, run, demo."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.cli import main


def test_health_check_on_cpu_records_an_event(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["health-check", "--device", "cpu", "--size", "64", "--db", db, "--run", "hc"]) == 0
    out = capsys.readouterr().out
    assert "cpu (CPU):" in out and "ok" in out and str(tmp_path / "l.db") in out
    events = Ledger(make_engine(db)).events("hc")
    assert [e.kind for e in events] == ["health_check"] and events[0].payload["ok"] is True


def test_health_check_of_a_missing_device_is_one_line_and_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["health-check", "--device", "cuda:9", "--db", f"sqlite:///{tmp_path / 'l.db'}"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.count("\n") == 1 and "cuda:9 does not exist" in err


def test_run_passes_the_exit_code_through_and_records_the_run(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    code = main(
        ["run", "--run", "ok", "--db", db, "--", sys.executable, "-c", "import time; time.sleep(0.2)"]
    )
    assert code == 0
    failing = main(["run", "--run", "bad", "--db", db, "--", sys.executable, "-c", "raise SystemExit(3)"])
    assert failing == 3
    ledger = Ledger(make_engine(db))
    assert ledger.get_run("ok").status == "finished" and ledger.get_run("bad").status == "failed"


def test_run_of_a_command_that_does_not_exist_exits_127_and_records_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["run", "--run", "nope", "--db", db, "--", "wattlog-no-such-command"]) == 127
    assert "command not found: wattlog-no-such-command" in capsys.readouterr().err
    assert Ledger(make_engine(db)).get_run("nope").status == "failed"


def test_run_with_an_unknown_site_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--site", "atlantis", "--db", f"sqlite:///{tmp_path / 'l.db'}", "--", "true"])
    assert code == 2 and "unknown site 'atlantis'" in capsys.readouterr().err


def test_demo_trains_and_prints_the_footprint_beside_table_19(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    args = ["demo", "--seconds", "3", "--model", "gpt-tiny", "--db", db, "--run", "d", "--simulate-gpus", "1"]
    assert main([*args, "--table"]) == 0
    out = capsys.readouterr().out
    assert "http://127.0.0.1:" in out
    assert "OLMo 2 7B" in out and "gpt-tiny" in out
    assert "simulated" in out and "estimated" in out
    assert "productive training" in out and str(tmp_path / "l.db") in out
    ledger = Ledger(make_engine(db))
    run = ledger.get_run("d")
    assert run.status == "finished" and run.model == "gpt-tiny"
    assert sum(t.energy_j for t in ledger.energy_totals("d")) > 0


def test_demo_ends_quietly_with_five_lines_like_wattlog_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["demo", "--seconds", "1", "--model", "gpt-tiny", "--db", db, "--run", "q"]) == 0
    out = capsys.readouterr().out
    assert "OLMo 2 7B" not in out and "productive training" not in out  # was the whole of Table 19
    last = out.rstrip("\n").splitlines()[-5:]
    assert last[0].startswith("Trained ") and "run q finished" in last[0] and "all recorded" in last[0]
    assert last[1].startswith("Energy: ") and "source: estimated" in last[1] and "(band " in last[1]
    assert last[2].startswith("CO2 ") and "site world" in last[2]
    assert last[3] == f"Ledger: {tmp_path / 'l.db'}" or str(tmp_path / "l.db") in last[3]
    assert last[4] == f"Full table beside Table 19: wattlog table q --reference --db {db}"
    # what the machine lacks in one line (was 9 wrapped lines about NVIDIA, AMD, Gaudi and RAPL)
    assert len([line for line in out.splitlines() if "not measuring" in line or "Not found" in line]) <= 1
    [progress] = [line for line in out.splitlines() if line.startswith("step ")]
    assert " loss " in progress and " speed " in progress and " power " in progress and " energy " in progress
    assert " W " in progress.split(" power ")[1][:12] or " power - " in progress  # the unit with its value


def test_the_lines_of_what_was_not_found_name_each_once_and_verbose_says_why() -> None:
    from wattlog.trainer.demo import not_found_lines

    notes = ["NVIDIA: no NVIDIA driver found", "AMD: amdsmi cannot load", "AMD: second", "RAPL: no tree"]
    [line] = not_found_lines(notes, verbose=False)
    assert (
        line.startswith("Not found: NVIDIA, AMD, RAPL (")
        and "--verbose" in line
        and "wattlog sensors" in line
    )
    assert not_found_lines(notes, verbose=True) == notes and not_found_lines([], verbose=False) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "gpt-huge"], "unknown model 'gpt-huge'"),
        (["--site", "atlantis"], "unknown site 'atlantis'"),
        (["--seconds", "0"], "--seconds must be > 0"),
    ],
)
def test_demo_bad_input_is_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", *args]) == 2
    assert message in capsys.readouterr().err


def test_run_with_a_ledger_that_cannot_be_opened_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--db", f"sqlite:///{tmp_path}/no/such/dir/l.db", "--", "true"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "does not exist" in err


def test_run_resume_continues_the_same_run(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["run", "--run", "job", "--db", db, "--", "false"]) == 1
    assert main(["run", "--run", "job", "--db", db, "--resume", "--", "true"]) == 0
    run = Ledger(make_engine(db)).get_run("job")
    assert run.restarts == 1 and run.status == "finished"


def test_run_again_under_the_same_name_is_a_new_attempt_said_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["run", "--run", "job", "--db", db, "--", "true"]) == 0
    capsys.readouterr()
    assert main(["run", "--run", "job", "--db", db, "--", "true"]) == 0  # used to exit 2: the name exists
    out, err = capsys.readouterr()
    [notice] = [line for line in err.splitlines() if line.startswith("wattlog: ")]
    assert "recorded as job-2" in notice and "--resume" in notice
    assert "Run job-2: measuring" in out
    assert {r.name for r in Ledger(make_engine(db)).runs()} == {"job", "job-2"}


def test_in_a_pipe_a_long_line_is_not_broken_inside_its_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # a pipe: rich's 80 columns
    db = f"sqlite:///{tmp_path / 'l.db'}"
    name = "a-run-name-long-enough-to-push-the-metrics-url-past-80-columns"
    assert main(["run", "--run", name, "--db", db, "--", "true"]) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if "measuring the node" in x]
    assert line.endswith("/metrics") and "http://127.0.0.1:" in line  # used to wrap before the URL


def test_health_check_records_a_finished_run_with_a_site_and_the_table_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["health-check", "--device", "cpu", "--size", "64", "--db", db, "--run", "hc"]) == 0
    run = Ledger(make_engine(db)).get_run("hc")
    assert (run.site, run.status, run.stage) == ("world", "finished", "debugging") and run.end_s is not None
    capsys.readouterr()
    # used to exit 2: the run had no site; named, as a debug run is not a Table 19 row by itself
    assert main(["table", "hc", "--db", db]) == 0


def test_run_records_phase_stage_group_device_gpu_hours_and_requests(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    args = [
        "run", "--run", "serve", "--db", db, "--project", "p", "--role", "final", "--stage", "inference",
        "--group", "7B", "--device-model", "H100", "--gpu-hours", "12.5", "--requests", "1000",
        "--phase", "final", "--", "true",
    ]  # fmt: skip
    assert main(args) == 0
    run = Ledger(make_engine(db)).get_run("serve")
    assert (run.stage, run.scale_group, run.device_model, run.phase) == ("inference", "7B", "H100", "final")
    assert (run.gpu_hours, run.requests) == (12.5, 1000)


def test_run_with_an_unknown_stage_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--stage", "pre-train", "--db", f"sqlite:///{tmp_path / 'l.db'}", "--", "true"])
    assert code == 2 and "unknown stage 'pre-train'" in capsys.readouterr().err
