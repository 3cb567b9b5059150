"""`wattlog agent`: sidecar runs, exit codes, clean stop on SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from wattlog.cli import main


def test_runs_for_a_while_and_reports_each_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--seconds", "0.3", "--port", "0", "--simulate", "1"]) == 0
    out = capsys.readouterr().out
    assert "metrics at http://127.0.0.1:" in out and ":9464" not in out  # port 0 prints the picked port
    assert "GPU-sim-0000" in out and "simulated" in out
    assert "estimated" in out  # no sensor on this machine's CPU: the estimate, labelled
    assert "sampler:" in out and "achieved period" in out and "overruns" in out


def test_the_commands_exit_code_is_propagated(capsys: pytest.CaptureFixture[str]) -> None:
    command = [sys.executable, "-c", "import sys; sys.exit(3)"]
    assert main(["agent", "--port", "-1", "--simulate", "1", "--", *command]) == 3
    assert "GPU-sim-0000" in capsys.readouterr().out


def test_a_missing_command_is_one_line_and_127(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--port", "-1", "--", "no-such-command-wattlog"]) == 127
    captured = capsys.readouterr()
    assert captured.err.strip() == "wattlog agent: command not found: no-such-command-wattlog"
    assert captured.out == ""


def test_bad_options_name_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--seconds", "0"]) == 2
    assert "--seconds must be > 0" in capsys.readouterr().err


def test_sigterm_stops_cleanly_and_still_reports() -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from wattlog.cli import run; run()",
            "agent",
            "--port",
            "-1",
            "--simulate",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("sampling until Ctrl-C"):
                break
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 143  # 128 + SIGTERM, as a shell reports it (was 130, SIGINT's code)
    assert "GPU-sim-0000" in out and "sampler:" in out


def test_jsonl_keeps_every_joule_with_its_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "energy.jsonl"
    argv = [
        "agent",
        "--seconds",
        "0.5",
        "--port",
        "-1",
        "--simulate",
        "1",
        "--flush-s",
        "0.1",
        "--jsonl",
        str(path),
    ]
    assert main(argv) == 0
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    gpu = [r for r in rows if r["type"] == "interval" and r["device"] == "GPU-sim-0000"]
    assert len(gpu) >= 2 and all(r["source"] == "simulated" for r in gpu)
    assert sum(r["energy_j"] for r in gpu) > 0
    assert {r["source"] for r in rows if r["type"] == "interval"} == {"simulated", "estimated"}
    capsys.readouterr()
