"""What a SLURM admin installs: a prolog that starts ``wattlog node`` on every node of a job, an
epilog that stops it and writes the job's energy, CO2 and water where SLURM users look.

    wattlog slurm scripts /etc/slurm/wattlog --db "$URL" --site jupiter   # writes prolog + epilog
    # slurm.conf: Prolog=/etc/slurm/wattlog/prolog  Epilog=/etc/slurm/wattlog/epilog  PrologFlags=Alloc

The prolog (run by slurmd as root at the allocation) starts the node's agent detached, in
its own session, and returns. The agent joins the run ``slurm-<job id>`` in the ledger,
measures the node, and on the job's first node rewrites the job's AdminComment with the
job's figures every ``comment_every_s`` (``scontrol show job`` shows it). The epilog stops
the agent (its last flush reaches the ledger), writes the final figures (``scontrol update``;
once SLURM counts the job as finished only ``sacctmgr modify job`` can, with slurmdbd, which
is where ``sacct -o AdminComment`` reads), and on the batch host appends the report card
(``wattlog table RUN --format markdown``) to the job's output file.
An epilog never fails the job's node for wattlog's sake (a failing epilog drains the node):
what could not be written is said in slurmd's log, and the figures stay in the ledger.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from wattlog.accounting.carbon.sites import run_catalog
from wattlog.accounting.fleet.job_files import JobUser, append_as, job_user
from wattlog.accounting.fleet.node import NodeAgent, NodeOptions
from wattlog.accounting.fleet.slurm_lifetime import JobWatch
from wattlog.accounting.ledger.engine import make_engine
from wattlog.accounting.ledger.models import Status
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.publishing.render import TableFormat, TableRow, footnotes, render
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.accounting.ranges import Quantity, bounds
from wattlog.errors import ConfigError, WattlogError
from wattlog.telemetry.agent import AgentConfig

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]
"""Runs a SLURM command and returns its outcome (tests pass a recorder)."""


def run_slurm(args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a SLURM command (a missing binary reads as exit 127, like a shell)."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)  # noqa: S603 - argv of SLURM's own tools (scontrol, sacctmgr), no shell
    except FileNotFoundError:
        return subprocess.CompletedProcess(args, 127, "", f"{args[0]}: not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"{args[0]}: no answer in 30 s")


COMMENT_KEY = "wattlog"
"""The AdminComment is ``{"wattlog": {...}}``, so other tools' comments can sit beside it in JSON."""


@dataclass
class SlurmHooks:
    """The prolog/epilog settings, the same in both (the scripts pass them as options).

    Raises:
        ConfigError: On construction, if a value is out of range.
    """

    db: str | None = None
    """Ledger URL; None = $WATTLOG_DB (the scripts export it, so it never shows in `ps`)."""
    site: str = ""
    """Site of every job's run (its PUE, WUE and carbon intensity); "" = energy only."""
    run_format: str = "slurm-{job_id}"
    """Run name of a job; the job's trainer joins it with ``Tracker(run=..., agent=False)``."""
    state_dir: Path = Path("/run/wattlog-slurm")
    """Where the agents' pid and log files live (root only)."""
    comment_every_s: float = 60.0
    """Seconds between AdminComment updates while the job runs (first node only)."""
    flush_s: float = 10.0
    """Seconds between the agent's ledger flushes."""
    port: int = 9464
    """Metrics port of the agent (-1 serves none); Prometheus finds it via file_sd."""
    listen: str = "0.0.0.0"  # noqa: S104 - the cluster's Prometheus scrapes every node
    """Address the metrics server binds."""
    simulate: int = 0
    """Simulated GPUs added to the node's devices (tests; labelled simulated)."""
    stop_timeout_s: float = 60.0
    """How long the epilog waits for the agent's last flush."""

    def __post_init__(self) -> None:
        if "{job_id}" not in self.run_format:
            raise ConfigError(f"--run-format must contain {{job_id}}, got {self.run_format!r}")
        if not self.comment_every_s > 0 or not self.flush_s > 0 or not self.stop_timeout_s > 0:
            raise ConfigError("--comment-every-s, --flush-s and --stop-timeout-s must be > 0")

    def run_name(self, job_id: str) -> str:
        """The job's run name."""
        return self.run_format.format(job_id=job_id)

    def options(self) -> list[str]:
        """These settings as `wattlog slurm` options (the ledger URL stays in the environment)."""
        args = ["--run-format", self.run_format, "--state-dir", str(self.state_dir)]
        args += ["--comment-every-s", f"{self.comment_every_s:g}", "--flush-s", f"{self.flush_s:g}"]
        args += ["--port", str(self.port), "--listen", self.listen, "--simulate", str(self.simulate)]
        args += ["--stop-timeout-s", f"{self.stop_timeout_s:g}"]
        return [*args, "--site", self.site] if self.site else args


@dataclass(frozen=True, slots=True)
class JobEnv:
    """The job as slurmd describes it to a prolog or epilog."""

    job_id: str
    host: str

    @classmethod
    def of(cls, environ: Mapping[str, str]) -> JobEnv:
        """Read SLURM_JOB_ID and SLURMD_NODENAME (raises ConfigError outside a prolog/epilog)."""
        job_id = environ.get("SLURM_JOB_ID", "").strip()
        if not job_id:
            raise ConfigError("no SLURM_JOB_ID: `wattlog slurm prolog|epilog` run as slurmd's Prolog/Epilog")
        return cls(job_id, environ.get("SLURMD_NODENAME") or os.uname().nodename.split(".")[0])

    def file(self, hooks: SlurmHooks, suffix: str) -> Path:
        """This job's file on this node in the state folder (``<job>.<host>.<suffix>``)."""
        return hooks.state_dir / f"{self.job_id}.{self.host}.{suffix}"


def start_agent(hooks: SlurmHooks, environ: Mapping[str, str]) -> int:
    """The prolog: start this node's agent detached (own session, output to a log); its pid."""
    job = JobEnv.of(environ)
    hooks.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    command = [sys.executable, "-m", "wattlog", "slurm", *hooks.options(), "agent"]
    with job.file(hooks, "log").open("ab") as log:
        # slurmd waits for the prolog's output pipe: the agent must hold none of it
        process = subprocess.Popen(  # noqa: S603 - argv of this Python running wattlog, no shell
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env=dict(environ),
        )  # fmt: skip
    job.file(hooks, "pid").write_text(f"{process.pid}\n")
    return process.pid


def serve_agent(
    hooks: SlurmHooks, environ: Mapping[str, str], stop: threading.Event, runner: Runner = run_slurm
) -> int:
    """What the prolog starts: measure the node until `stop`; the first node keeps the comment current.

    Returns:
        0, or 1 when energy rows, or the run's events or band revisions, did not reach the ledger
        (spooled for `wattlog replay`, or lost).
    """
    job = JobEnv.of(environ)
    run = hooks.run_name(job.job_id)
    agent = AgentConfig(
        flush_s=hooks.flush_s,
        host=job.host,
        listen_host=hooks.listen,
        port=None if hooks.port == -1 else hooks.port,
        linger_s=0.0,  # the epilog waits for this process: the ledger, not a last scrape, is the record
        lock_dir=hooks.state_dir / "locks",
    )
    options = NodeOptions(run=run, db=hooks.db, agent=agent, site=hooks.site, simulate_gpus=hooks.simulate)
    node = NodeAgent(options, environ).start()
    print(f"wattlog slurm agent: {node.describe()}", flush=True)
    watch = JobWatch(job.job_id, runner)  # ends an agent whose job ended or whose controller is gone
    try:
        while not stop.wait(hooks.comment_every_s):
            if (gone := watch.ended()) is not None:
                print(f"wattlog slurm agent: {gone}: ending", flush=True)
                break
            if node.job.node_index == 0 and node.ledger is not None:
                print(f"wattlog slurm agent: {_live_comment(node.ledger, hooks, job, runner)}", flush=True)
    finally:
        node.close()
    done = node.completeness()
    if not done.complete:  # the epilog's log says why the agent failed the job's record
        print(done.line("wattlog slurm agent", run), flush=True)
        return 1
    return 0


def _live_comment(ledger: Ledger, hooks: SlurmHooks, job: JobEnv, runner: Runner) -> str:
    run = hooks.run_name(job.job_id)
    try:  # a ledger hiccup or a refused update skips this comment, never the measurement
        row, site = job_row(ledger, run, hooks.site)
        return write_comment(job.job_id, comment(row, run, site, final=False), runner)
    except WattlogError as error:
        return str(error)


def stop_agent(hooks: SlurmHooks, job: JobEnv, sleep: Callable[[float], None] = time.sleep) -> str:
    """Send the node's agent SIGTERM and wait for its last flush; a line saying what happened."""
    pid_file = job.file(hooks, "pid")
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return f"no agent pid in {pid_file} (the prolog did not start one)"
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pid_file.unlink(missing_ok=True)
        return f"agent {pid} had already ended (see {job.file(hooks, 'log')})"
    deadline = time.monotonic() + hooks.stop_timeout_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return f"agent {pid} still flushing after {hooks.stop_timeout_s:g} s: its last rows may be late"
        sleep(0.05)
    pid_file.unlink(missing_ok=True)
    return f"agent {pid} stopped"


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie of ours is reaped and counts as ended)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)  # our own child in tests; slurmd reaps it in a cluster
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def job_row(ledger: Ledger, run: str, site: str) -> tuple[TableRow, str]:
    """The run's Table-19 row, gated like every table's (a simulated or gappy run is marked), and its
    site (`site` when given, else the one recorded)."""
    options = TableOptions(catalog=run_catalog(), site=site or None)  # $WATTLOG_SITES_FILE too
    info = ledger.get_run(run)
    return run_row(ledger, info, options), site or info.site


def _figure(value: Quantity | None, scale: float) -> float | list[float] | None:
    """A figure in the comment's unit: a number, [low, high] for a range, None when unknown."""
    if value is None:
        return None
    lo, hi = bounds(value)
    return round(lo * scale, 6) if lo == hi else [round(lo * scale, 6), round(hi * scale, 6)]


def comment(row: TableRow, run: str, site: str, *, final: bool, now: datetime | None = None) -> str:
    """The AdminComment JSON: energy (J), CO2 (g), water (L), source, site, whether the measurement
    passed the validity gate (null: not gated; the card says why not), when, and whether final."""
    document = {
        COMMENT_KEY: {
            "run": run,
            "energy_j": _figure(row.energy_j, 1.0),
            "co2_g": _figure(row.co2_t, 1e6),
            "water_l": _figure(row.water_kl, 1e3),
            "source": row.energy_source,
            "site": site or None,
            "valid": None if row.validity is None else not row.validity,
            "final": final,
            "at": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
        }
    }
    return json.dumps(document, separators=(",", ":"))


def write_comment(job_id: str, text: str, runner: Runner) -> str:
    """Set the job's AdminComment (live record, else slurmdbd's); a line saying where it went.

    Raises:
        ConfigError: Neither SLURM command could store it (the reasons of both).
    """
    live = runner(["scontrol", "update", f"job={job_id}", f"AdminComment={text}"])
    if live.returncode == 0:
        return "AdminComment set (scontrol)"
    # A finished job's live record is read-only; slurmdbd's copy (what sacct reads) is not.
    stored = runner(
        ["sacctmgr", "-i", "modify", "job", "where", f"jobid={job_id}", "set", f"AdminComment={text}"]
    )
    if stored.returncode == 0:
        return "AdminComment set (sacctmgr)"
    reasons = f"scontrol: {_said(live)}; sacctmgr: {_said(stored)}"
    raise ConfigError(f"job {job_id}'s AdminComment not written ({reasons})")


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr or done.stdout or f"exit {done.returncode}").strip().splitlines()[-1]


def job_fields(shown: str) -> dict[str, str]:
    """``scontrol show job`` output as key -> value (values without spaces)."""
    fields: dict[str, str] = {}
    for token in shown.split():
        key, sep, value = token.partition("=")
        if sep and key not in fields:
            fields[key] = value
    return fields


def report_card(row: TableRow, run: str) -> str:
    """The end-of-job card: the run's row in Markdown and its notes, as `wattlog table` prints it."""
    text = render([row], TableFormat.MARKDOWN, footnotes([row]))
    assert isinstance(text, str)  # Markdown renders to text
    return f"\nwattlog: energy, CO2 and water of this job (run {run}; `wattlog table {run}`)\n\n{text}"


def finish_job(hooks: SlurmHooks, environ: Mapping[str, str], runner: Runner = run_slurm) -> list[str]:
    """The epilog: stop the agent, write the final AdminComment, append the card on the batch host.

    Returns:
        What happened, one line per part (the CLI prints them into slurmd's log).
    """
    job = JobEnv.of(environ)
    said = [stop_agent(hooks, job)]
    run = hooks.run_name(job.job_id)
    shown = runner(["scontrol", "show", "job", job.job_id])
    fields = job_fields(shown.stdout) if shown.returncode == 0 else {}
    batch_host = fields.get("BatchHost", job.host) == job.host
    engine = make_engine(hooks.db, create=False)
    try:
        ledger = Ledger(engine)
        if batch_host and ledger.get_run(run).status == Status.RUNNING:  # no trainer ended it
            ledger.end_run(run, job_status(environ))
        row, site = job_row(ledger, run, hooks.site)
    finally:
        engine.dispose()
    if batch_host:
        user = job_user(environ, fields)
        said.append(_append_card(row, run, fields.get("StdOut") or _stdout_of(environ, job), user))
    try:
        said.append(write_comment(job.job_id, comment(row, run, site, final=True), runner))
    except ConfigError as error:
        said.append(str(error))
    return said


def job_status(environ: Mapping[str, str]) -> Status:
    """The run's status from the job's exit (SLURM_JOB_EXIT_CODE2 is "code:signal")."""
    code, _, signum = environ.get("SLURM_JOB_EXIT_CODE2", "0:0").partition(":")
    if signum.strip() not in ("", "0"):
        return Status.KILLED
    return Status.FINISHED if code.strip() in ("", "0") else Status.FAILED


def _stdout_of(environ: Mapping[str, str], job: JobEnv) -> str:
    """The job's output file from the epilog's environment (SLURM leaves %j unexpanded there)."""
    return environ.get("SLURM_JOB_STDOUT", "").replace("%j", job.job_id)


def _append_card(row: TableRow, run: str, path: str, user: JobUser | None) -> str:
    """Append as the job's user only: their StdOut may be a link to root's files (fleet/job_files.py)."""
    if not path or path == "/dev/null":
        return "no output file to append the report card to"
    if user is None and os.geteuid() != 0:  # a personal epilog: it can touch only what its user can
        user = JobUser(os.geteuid(), os.getegid())
    if user is None:
        return f"report card not appended to {path}: the job's user is unknown (no SLURM_JOB_UID)"
    why = append_as(user, path, report_card(row, run))
    return f"report card not appended to {path}: {why}" if why else f"report card appended to {path}"


def scripts(hooks: SlurmHooks, folder: Path, exports: Mapping[str, str]) -> tuple[Path, Path]:
    """Write the prolog and epilog slurm.conf points at (root-only: the ledger URL may hold a secret).

    Args:
        hooks: The settings both scripts pass.
        folder: Where to write ``prolog`` and ``epilog``.
        exports: Variables the scripts export (slurmd gives them almost no environment: PATH, the
            ledger URL as WATTLOG_DB, PYTHONPATH where wattlog is not installed).
    """
    folder.mkdir(parents=True, exist_ok=True)
    wattlog = [sys.executable, "-m", "wattlog", "slurm"]
    lines = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in exports.items())
    written = []
    for hook in ("prolog", "epilog"):
        path = folder / hook
        command = shlex.join([*wattlog, *hooks.options(), hook])
        path.write_text(f"#!/bin/sh\n# written by `wattlog slurm scripts`\n{lines}exec {command}\n")
        path.chmod(0o700)
        written.append(path)
    return written[0], written[1]
