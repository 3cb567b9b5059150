"""`wattlog node` (one node of a multi-node job, measured into the shared ledger) and `wattlog agent`.

    srun --ntasks-per-node=1 wattlog node --run job-$SLURM_JOB_ID --listen 0.0.0.0 &
    wattlog node --run job-1 --db postgresql+psycopg://wattlog@db/wattlog --sample-nodes 4 -- ./train.sh

It joins the run (whichever node starts first creates it), measures the node
unless ``--sample-nodes`` leaves it out, writes every flush into the ledger,
serves metrics for Prometheus, and stops when the time is up, the command
exits (its exit code becomes ours), or on Ctrl-C/SIGTERM (forwarded to the
command by the telemetry supervisor; exit 130/143 as the shell reports them).

`wattlog agent` is the same agent as a sidecar, recording into no ledger
(optionally into a JSON Lines file)::

    wattlog agent --seconds 5                      # sample this machine for 5 s
    wattlog agent --port 0 -- python train.py      # measure while the command runs
    wattlog agent --jsonl energy.jsonl -- ./job.sh # and keep every flush interval in a file

Both compose their agent through :class:`~wattlog.accounting.fleet.recording.Recording`.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from wattlog.errors import ConfigError
from wattlog.numbers import MAX_SIMULATED_GPUS, check_number, check_port
from wattlog.options import (
    CommandArgument,
    DbOption,
    FlushOption,
    HwmonRootOption,
    LingerOption,
    LockDirOption,
    MetricsPortOption,
    PeriodMsOption,
    ProjectOption,
    SampleNodesOption,
    SecondsOption,
    SimulateOption,
    SiteOption,
    WholeNodeOption,
)
from wattlog.telemetry.agent_config import LINGER_S

if TYPE_CHECKING:
    from wattlog.accounting.fleet.node import NodeOptions
    from wattlog.telemetry.agent import Agent
    from wattlog.telemetry.sensors.simulated import SimulatedSensor
    from wattlog.telemetry.supervise import Outcome, Supervisor


def node(
    command: CommandArgument = None,
    run: Annotated[str, typer.Option("--run", help="Run name, the same on every node of the job.")] = "",
    db: DbOption = None,
    sample_nodes: SampleNodesOption = None,
    host: Annotated[
        str | None, typer.Option("--host", help="This node's name (default: the hostname).")
    ] = None,
    listen: Annotated[
        str, typer.Option("--listen", help="Address the metrics server binds (0.0.0.0 for Prometheus).")
    ] = "127.0.0.1",
    port: MetricsPortOption = 9464,
    period_ms: PeriodMsOption = 25.0,
    flush_s: FlushOption = 10.0,
    seconds: SecondsOption = None,
    project: ProjectOption = "default",
    site: SiteOption = "",
    simulate: SimulateOption = 0,
    simulate_load: Annotated[
        float, typer.Option(help="Scale of the simulated GPUs' power (unequal nodes in benches).")
    ] = 1.0,
    lock_dir: LockDirOption = None,
    linger_s: LingerOption = LINGER_S,
    hwmon_root: HwmonRootOption = None,
    lease_s: Annotated[
        float | None,
        typer.Option(
            "--lease-s",
            help="Seconds each flush holds this node's lease: a node silent longer is a gap "
            "(default: three flushes, at least 60).",
        ),
    ] = None,
) -> int:
    """Measure this node of a multi-node job into the shared ledger (one per node)."""
    from wattlog.accounting.fleet.node import NodeOptions
    from wattlog.telemetry.agent import AgentConfig, default_lock_dir

    _check_stretches(seconds, lease_s, flush_s)
    options = NodeOptions(
        run=run,
        db=db,
        sample_nodes=sample_nodes,
        agent=AgentConfig(
            period_s=period_ms / 1000.0,
            flush_s=flush_s,
            host=host or socket.gethostname(),
            listen_host=listen,
            port=None if port == -1 else port,
            linger_s=linger_s,
            lock_dir=lock_dir if lock_dir is not None else default_lock_dir(),
            hwmon_root=hwmon_root,
        ),
        project=project,
        site=site,
        simulate_gpus=simulate,
        simulate_load=simulate_load,
        lease_s=lease_s,
    )
    return _run_node(options, command, seconds)


def _check_stretches(seconds: float | None, lease_s: float | None, flush_s: float) -> None:
    if seconds is not None and seconds <= 0:
        raise ConfigError(f"--seconds must be > 0, got {seconds}")
    if lease_s is not None:
        check_number("--lease-s", lease_s, low=flush_s, high=86400, hint="at least one flush")


def _run_node(options: NodeOptions, command: list[str] | None, seconds: float | None) -> int:
    """Start the node, run or wait, close, print what was measured; the exit code."""
    from wattlog.accounting.fleet.agent_report import print_ending
    from wattlog.accounting.fleet.node import NodeAgent
    from wattlog.telemetry.agent_cli import run_or_wait
    from wattlog.telemetry.supervise import Supervisor, cannot_start

    console = _console()
    refused = cannot_start(command[0]) if command else None
    if refused is not None:
        Console(stderr=True, highlight=False).print(f"wattlog node: {refused.message}")
        return refused.exit_code
    node_agent = NodeAgent(options, os.environ)
    code = 0
    # SIGTERM and SIGINT go to the command; this process still flushes its last interval.
    with Supervisor() as supervisor:
        try:
            node_agent.start()
            console.print(f"wattlog node: {node_agent.describe()}", soft_wrap=True)
            if node_agent.measured or command:  # a sampled-out sidecar has nothing to wait for
                code = run_or_wait(supervisor, command, seconds, console, "wattlog node").exit_code
        finally:
            node_agent.close()  # the agent lingers until the next scrape read its final counters
    recording = node_agent.recording
    if node_agent.agent is None or recording is None:
        return code
    console.print(f"wattlog node: ledger {recording.describe_ledger()}", soft_wrap=True)
    spool = recording.spool
    if spool is not None and spool.rows:
        console.print(
            f"wattlog node: {spool.rows} energy rows spooled to {spool.path}: `wattlog replay` stores them"
        )
    return print_ending(node_agent.agent, console, "wattlog node", code, node_agent.completeness())


def agent(
    command: CommandArgument = None,
    seconds: SecondsOption = None,
    port: MetricsPortOption = 9464,
    period_ms: PeriodMsOption = 25.0,
    flush_s: FlushOption = 10.0,
    whole_node: WholeNodeOption = False,
    simulate: SimulateOption = 0,
    push: Annotated[
        str | None, typer.Option(help="Pushgateway URL to push to at each flush and at the end.")
    ] = None,
    jsonl: Annotated[
        Path | None, typer.Option(help="Append each flush's energy rows and gaps to this JSON Lines file.")
    ] = None,
    otlp: Annotated[
        str | None,
        typer.Option(help="OTLP/HTTP metrics URL: export hw.energy and hw.power (each flush)."),
    ] = None,
    lock_dir: LockDirOption = None,
    run: Annotated[str, typer.Option(help="The `run` label on every series (tells runs apart).")] = "",
    linger_s: LingerOption = LINGER_S,
    hwmon_root: HwmonRootOption = None,
) -> int:
    """Run the measuring agent (sidecar mode): sample, serve metrics, print what was measured."""
    from wattlog.accounting.fleet.agent_report import print_ending
    from wattlog.accounting.fleet.recording import Recording, RecordingConfig
    from wattlog.telemetry.agent import AgentConfig, default_lock_dir
    from wattlog.telemetry.otlp import OtlpConfig
    from wattlog.telemetry.supervise import Supervisor, cannot_start

    _check_agent_options(seconds, period_ms, flush_s, port, simulate, linger_s)
    config = AgentConfig(
        period_s=period_ms / 1000.0,
        flush_s=flush_s,
        port=None if port == -1 else port,
        whole_node=whole_node,
        pushgateway_url=push,
        run=run,
        linger_s=linger_s,
        lock_dir=lock_dir if lock_dir is not None else default_lock_dir(),
        hwmon_root=hwmon_root,
    )
    extra = _simulated(simulate)
    console = _console()
    refused = cannot_start(command[0]) if command else None
    if refused is not None:
        Console(stderr=True, highlight=False).print(f"wattlog agent: {refused.message}")
        return refused.exit_code
    otlp_config = OtlpConfig(otlp, interval_s=flush_s) if otlp else None
    recording = Recording(RecordingConfig(config, jsonl=jsonl, otlp=otlp_config), extra_sensors=extra)
    # SIGTERM and SIGINT go to the command; this process still flushes and reports.
    with Supervisor() as supervisor:
        try:
            runner = recording.start().agent
            assert runner is not None
            _say_started(runner, console)
            outcome = _measure(supervisor, runner, command, seconds, console)
        finally:
            recording.close()
    return print_ending(runner, console, "wattlog agent", outcome.exit_code, recording.completeness())


def _simulated(gpus: int) -> list[SimulatedSensor]:
    from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus

    return [SimulatedSensor(simulated_gpus(gpus, t0_s=time.monotonic()))] if gpus else []


def _check_agent_options(
    seconds: float | None, period_ms: float, flush_s: float, port: int, simulate: int, linger_s: float
) -> None:
    """`wattlog agent`'s numbers in range (ConfigError naming the option otherwise)."""
    if seconds is not None:
        check_number("--seconds", seconds, low=0, high=10 * 365 * 86400, low_open=True)
    check_number("--period-ms", period_ms, low=0, high=60_000, low_open=True, hint="the default is 25")
    check_number("--flush-s", flush_s, low=period_ms / 1000.0, high=86400, hint="the default is 10")
    check_port("--port", port, allow_none=-1)
    check_number("--simulate", simulate, low=0, high=MAX_SIMULATED_GPUS)
    check_number("--linger-s", linger_s, low=0, high=3600, hint="0 closes at once")


def _say_started(runner: Agent, console: Console) -> None:
    """Where the agent serves its metrics, and its start notes."""
    console.print(f"wattlog agent: metrics at {runner.metrics_url or '(not served)'}", soft_wrap=True)
    for note in runner.notes:
        console.print(f"  note: {note}", markup=False)  # pip's [extra] is no markup


def _measure(
    supervisor: Supervisor, runner: Agent, command: list[str] | None, seconds: float | None, console: Console
) -> Outcome:
    """Run or wait (run_or_wait) under the live panel: on a terminal, power and energy per device, live."""
    from wattlog.telemetry.agent_cli import run_or_wait
    from wattlog.telemetry.live_panel import LivePanel

    with LivePanel(runner.snapshot, console):
        return run_or_wait(supervisor, command, seconds, console, "wattlog agent")


def _console() -> Console:
    """stdout; a pipe or a log file gets a wide table, a terminal its own width."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 120)


def register(app: typer.Typer) -> None:
    """Add `wattlog node` and `wattlog agent` to `app` (arguments after `--` are the command to run)."""
    app.command(context_settings={"allow_interspersed_args": False})(node)
    app.command(context_settings={"allow_interspersed_args": False})(agent)
