"""The SLURM prolog/epilog pair without a SLURM: SLURM's commands answered by a recorder.

The real daemons run them in tests/integration/test_slurm.py; here each part's behaviour
(the comment's units, where it is written, the card, the run's end) is checked in seconds.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wattlog.accounting.fleet.slurm_hooks import (
    JobEnv,
    SlurmHooks,
    comment,
    finish_job,
    job_status,
    scripts,
    serve_agent,
    stop_agent,
    write_comment,
)
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.models import Status
from wattlog.accounting.publishing.render import TableRow
from wattlog.accounting.ranges import Range
from wattlog.cli import full_app
from wattlog.errors import ConfigError

NOW = datetime(2026, 12, 4, 3, 0, tzinfo=UTC)


class Slurm:
    """Answers SLURM commands like a cluster whose job has ended (scontrol refuses updates)."""

    def __init__(self, shown: str = "", live: bool = False, dbd: bool = True) -> None:
        self.calls: list[list[str]] = []
        self.shown, self.live, self.dbd = shown, live, dbd

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(args)
        ok = (
            args[:2] == ["scontrol", "show"]
            or (args[:2] == ["scontrol", "update"] and self.live)
            or (args[0] == "sacctmgr" and self.dbd)
        )
        if args[0] == "sacctmgr" and not self.dbd:
            return subprocess.CompletedProcess(
                args, 1, "", "sacctmgr: error: Problem talking to the database"
            )
        error = "" if ok else "slurm_update error: Job has already finished"
        return subprocess.CompletedProcess(args, 0 if ok else 1, self.shown if ok else "", error)

    def comments(self) -> list[dict[str, object]]:
        """The figures written, by either command."""
        texts = [a[-1] for a in self.calls if a[-1].startswith("AdminComment=")]
        return [json.loads(t.removeprefix("AdminComment="))["wattlog"] for t in texts]


def _row(**figures: object) -> TableRow:
    base: dict[str, object] = {
        "model": "slurm-7",
        "energy_j": 3.6e6,  # 1 kWh
        "pue": 1.2,
        "carbon_intensity_kg_per_kwh": 0.332,
        "co2_t": 0.0003984,
        "wue_l_per_kwh": 1.29,
        "water_kl": 0.001548,
        "energy_source": "counter",
    }
    return TableRow(**{**base, **figures})  # type: ignore[arg-type]


def test_the_comment_gives_joules_grams_and_litres_and_null_where_unknown() -> None:
    figure = json.loads(comment(_row(), "slurm-7", "jupiter", final=True, now=NOW))["wattlog"]
    assert figure == {
        "run": "slurm-7",
        "energy_j": 3.6e6,
        "co2_g": 398.4,
        "water_l": 1.548,
        "source": "counter",
        "site": "jupiter",
        "valid": None,  # the row was not gated
        "final": True,
        "at": "2026-12-04T03:00:00+00:00",
    }
    gated = json.loads(comment(_row(validity=("1 simulated device(s)",)), "s", "", final=True))["wattlog"]
    assert (
        gated["valid"] is False
        and json.loads(comment(_row(validity=()), "s", "", final=True))["wattlog"]["valid"]
    )
    siteless = _row(co2_t=None, water_kl=Range(0.001, 0.002), pue=None)
    figure = json.loads(comment(siteless, "slurm-7", "", final=False, now=NOW))["wattlog"]
    assert figure["co2_g"] is None and figure["site"] is None  # unknown is null, never 0
    assert figure["water_l"] == [1.0, 2.0]  # a range stays a range


def test_a_running_job_takes_scontrol_a_finished_one_sacctmgr_and_neither_is_an_error() -> None:
    live = Slurm(live=True)
    assert write_comment("7", "{}", live) == "AdminComment set (scontrol)"
    assert [a[0] for a in live.calls] == ["scontrol"]
    ended = Slurm()
    assert write_comment("7", "{}", ended) == "AdminComment set (sacctmgr)"
    assert ended.calls[1] == ["sacctmgr", "-i", "modify", "job", "where", "jobid=7", "set", "AdminComment={}"]
    with pytest.raises(ConfigError, match="already finished.*Problem talking to the database"):
        write_comment("7", "{}", Slurm(dbd=False))


def test_the_jobs_exit_becomes_the_runs_status() -> None:
    assert job_status({"SLURM_JOB_EXIT_CODE2": "0:0"}) is Status.FINISHED
    assert job_status({"SLURM_JOB_EXIT_CODE2": "3:0"}) is Status.FAILED
    assert job_status({"SLURM_JOB_EXIT_CODE2": "0:9"}) is Status.KILLED
    assert job_status({}) is Status.FINISHED


def test_the_epilog_stops_the_agent_it_finds_and_says_so_when_there_is_none(tmp_path: Path) -> None:
    hooks = SlurmHooks(state_dir=tmp_path, stop_timeout_s=10)
    job = JobEnv("7", "n1")
    assert "no agent pid" in stop_agent(hooks, job)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    job.file(hooks, "pid").write_text(f"{child.pid}\n")
    assert stop_agent(hooks, job) == f"agent {child.pid} stopped"
    assert child.poll() is not None and not job.file(hooks, "pid").exists()


def test_agent_then_epilog_measure_comment_end_the_run_and_append_the_card(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    hooks = SlurmHooks(db=db, site="jupiter", state_dir=tmp_path / "state", comment_every_s=0.1, flush_s=0.1)
    hooks.port, hooks.simulate = -1, 1
    environ = {"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1", "SLURM_JOB_NODELIST": "n1"}
    environ |= {"SLURM_JOB_UID": str(os.getuid()), "SLURM_JOB_GID": str(os.getgid())}
    out = tmp_path / "job-7.out"
    out.write_text("")  # slurmstepd made it: the epilog never creates a job's files
    slurm = Slurm(shown=f"JobId=7 JobState=COMPLETING BatchHost=n1 StdOut={out}\n", live=True)
    stop = threading.Event()

    def runner(args: list[str]) -> subprocess.CompletedProcess[str]:
        done = slurm(args)
        if any(c["energy_j"] is not None for c in slurm.comments()):  # a live figure, then SIGTERM
            stop.set()
        return done

    safety = threading.Timer(30.0, stop.set)
    safety.start()
    assert serve_agent(hooks, environ, stop, runner) == 0
    safety.cancel()
    live = slurm.comments()
    assert live and not any(c["final"] for c in live)  # kept current while the job ran
    slurm.live = False  # the job has ended: only slurmdbd's copy can change
    said = finish_job(hooks, {**environ, "SLURM_JOB_EXIT_CODE2": "0:0"}, slurm)
    assert said[-1] == "AdminComment set (sacctmgr)" and f"report card appended to {out}" in said
    final = slurm.comments()[-1]
    assert final["final"] is True and final["run"] == "slurm-7" and "simulated" in str(final["source"])
    # before the first flush the figure is unknown (null), never 0; the final one includes the last flush
    measured = [c["energy_j"] for c in live if c["energy_j"] is not None]
    assert isinstance(final["energy_j"], float) and measured and final["energy_j"] >= max(measured)  # type: ignore[type-var]
    card = out.read_text()
    assert "wattlog: energy, CO2 and water of this job (run slurm-7" in card
    # gated as `wattlog table` is: a simulated device is no measurement (the card once said nothing)
    assert final["valid"] is False and "slurm-7 (slurm-7, development) (NOT VALID)" in card
    assert "NOT VALID: 1 simulated device(s)" in card
    assert Ledger(make_engine(db)).get_run("slurm-7").status == Status.FINISHED


def test_the_scripts_pass_settings_the_cli_reads_back_and_keep_the_url_out_of_ps(tmp_path: Path) -> None:
    hooks = SlurmHooks(site="jupiter", state_dir=tmp_path / "state", comment_every_s=30)
    prolog, epilog = scripts(hooks, tmp_path, {"WATTLOG_DB": "postgresql://u:secret@db/w"})
    text = prolog.read_text()
    assert "export WATTLOG_DB=postgresql://u:secret@db/w\n" in text and text.rstrip().endswith(" prolog")
    assert prolog.stat().st_mode & 0o777 == 0o700 and epilog.read_text().rstrip().endswith(" epilog")
    assert text.count("secret") == 1  # exported, not an argument
    args = shlex.split(text.split(" -m wattlog slurm ", 1)[1])[:-1]
    result = CliRunner().invoke(full_app(), ["slurm", *args, "scripts", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "again" / "prolog").read_text().split("exec ")[1] == text.split("exec ")[1]


def test_a_failing_hook_exits_0_so_slurm_never_drains_the_node_for_it(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {"SLURM_JOB_ID": "9", "SLURMD_NODENAME": "n1"}
    prolog = CliRunner().invoke(
        full_app(), ["slurm", "--state-dir", str(blocker / "state"), "prolog"], env=env
    )
    assert prolog.exit_code == 0 and "no agent started" in prolog.output
    missing = f"sqlite:///{tmp_path / 'no-ledger.db'}"
    epilog = CliRunner().invoke(
        full_app(), ["slurm", "--db", missing, "--state-dir", str(tmp_path), "epilog"], env=env
    )
    assert epilog.exit_code == 0 and "the job's figures not written" in epilog.output
