"""`wattlog node`: one node of a multi-node job, measured into the shared ledger.

    srun --ntasks-per-node=1 wattlog node --run job-$SLURM_JOB_ID --listen 0.0.0.0 &
    wattlog node --run job-1 --db postgresql+psycopg://wattlog@db/wattlog --sample-nodes 4 -- ./train.sh

It joins the run (whichever node starts first creates it), measures the node
unless ``--sample-nodes`` leaves it out, writes every flush into the ledger,
serves metrics for Prometheus, and stops when the time is up, the command
exits (its exit code becomes ours), or on Ctrl-C/SIGTERM (forwarded to the
command by the telemetry supervisor; exit 130/143 as the shell reports them).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from wattlog.accounting.node import NodeAgent, NodeOptions
from wattlog.errors import ConfigError
from wattlog.telemetry.agent import AgentConfig, default_lock_dir
from wattlog.telemetry.agent_cli import print_ending, run_or_wait
from wattlog.telemetry.supervise import Supervisor, cannot_start


def node(
    command: Annotated[
        list[str] | None, typer.Argument(help="Command to run and measure (after --); stop when it exits.")
    ] = None,
    run: Annotated[str, typer.Option("--run", help="Run name, the same on every node of the job.")] = "",
    db: Annotated[
        str | None, typer.Option("--db", help="Shared ledger URL (default $WATTLOG_DB); secrets from env.")
    ] = None,
    sample_nodes: Annotated[
        int | None,
        typer.Option(
            "--sample-nodes",
            min=1,
            help="Measure K of the nodes (spread evenly), extrapolate the rest ($WATTLOG_SAMPLE_NODES).",
        ),
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="This node's name (default: the hostname).")
    ] = None,
    listen: Annotated[
        str, typer.Option("--listen", help="Address the metrics server binds (0.0.0.0 for Prometheus).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Metrics port; 0 picks a free one; -1 serves nothing.")] = 9464,
    period_ms: Annotated[float, typer.Option(help="Sampling period, milliseconds.")] = 25.0,
    flush_s: Annotated[float, typer.Option(help="Seconds between flushes to the ledger.")] = 10.0,
    seconds: Annotated[float | None, typer.Option(help="Stop after this many seconds.")] = None,
    project: Annotated[str, typer.Option(help="Project of the run (if this node creates it).")] = "default",
    site: Annotated[str, typer.Option(help="Site of the run (if this node creates it).")] = "",
    simulate: Annotated[
        int, typer.Option(min=0, help="Add N simulated GPUs (training-like power, labelled simulated).")
    ] = 0,
    simulate_load: Annotated[
        float, typer.Option(help="Scale of the simulated GPUs' power (unequal nodes in benches).")
    ] = 1.0,
    lock_dir: Annotated[
        Path | None,
        typer.Option(help="Folder of the node's device locks, shared by its agents (default: temp/wattlog)."),
    ] = None,
    linger_s: Annotated[
        float,
        typer.Option(
            help="At the end, serve until the next scrape read the final counters and the finished mark "
            "(at most this; no wait when nothing scrapes)."
        ),
    ] = 30.0,
) -> int:
    """Measure this node of a multi-node job into the shared ledger (one per node)."""
    if seconds is not None and seconds <= 0:
        raise ConfigError(f"--seconds must be > 0, got {seconds}")
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
        ),
        project=project,
        site=site,
        simulate_gpus=simulate,
        simulate_load=simulate_load,
    )
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
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
    if node_agent.agent is not None:
        for sink in node_agent.sinks:
            console.print(f"wattlog node: ledger {sink.describe()}")
        code = print_ending(node_agent.agent, console, "wattlog node", code)
    return code


def register(app: typer.Typer) -> None:
    """Add `wattlog node` to `app` (arguments after `--` are the command to run)."""
    app.command(context_settings={"allow_interspersed_args": False})(node)
