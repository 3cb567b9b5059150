"""The trainer's commands: `wattlog demo`, `wattlog run -- COMMAND` and `wattlog health-check`."""

from __future__ import annotations

import socket
import time
from typing import Annotated

import typer
from rich.console import Console

DbOption = Annotated[
    str | None, typer.Option("--db", help="Ledger URL (default $WATTLOG_DB or ./wattlog.db).")
]


def demo(
    seconds: Annotated[float, typer.Option("--seconds", help="How long to train, seconds.")] = 60.0,
    run: Annotated[str | None, typer.Option("--run", help="Run name (default demo-<UTC time>).")] = None,
    site: Annotated[str, typer.Option("--site", help="Site from `wattlog sites`.")] = "world",
    model: Annotated[str, typer.Option("--model", help="gpt-small or gpt-tiny.")] = "gpt-small",
    db: DbOption = None,
    simulate_gpus: Annotated[
        int, typer.Option("--simulate-gpus", help="Add N simulated GPUs (labelled simulated).")
    ] = 0,
    port: Annotated[int, typer.Option("--port", help="Metrics port on 127.0.0.1 (0: any free port).")] = 0,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Sequences per step.")] = 8,
) -> int:
    """Train a small GPT for about a minute under the tracker and print its footprint beside Table 19."""
    from wattlog.trainer.demo import DemoConfig, run_demo

    config = DemoConfig(
        seconds=seconds,
        run=run,
        site=site,
        model=model,
        db=db,
        simulate_gpus=simulate_gpus,
        port=port,
        batch_size=batch_size,
    )
    return run_demo(config)


def run(
    command: Annotated[
        list[str] | None, typer.Argument(help="The command and its arguments, after --.")
    ] = None,
    name: Annotated[str | None, typer.Option("--run", help="Run name (default run-<UTC time>).")] = None,
    site: Annotated[str, typer.Option("--site", help="Site from `wattlog sites`, for the table.")] = "world",
    db: DbOption = None,
    port: Annotated[int, typer.Option("--port", help="Metrics port on 127.0.0.1 (0: any free port).")] = 0,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run of that name (a restart).")
    ] = False,
) -> int:
    """Run COMMAND with an agent sampling the node and record the run; exit with its code.

    SIGTERM and SIGINT are forwarded to COMMAND; the run is then closed as preempted (exit 143) or
    killed (130) with its last interval flushed. 127: not found, 126: not executable, 128+N: killed
    by signal N.
    """
    from wattlog.trainer.runner import run_command

    label = name or time.strftime("run-%Y%m%d-%H%M%S", time.gmtime())
    return run_command(command or [], run=label, site=site, db=db, port=port, resume=resume)


def health_check(
    device: Annotated[
        list[str] | None,
        typer.Option("--device", help="cpu or cuda:N; repeat it (default: every GPU, else cpu)."),
    ] = None,
    db: DbOption = None,
    run: Annotated[
        str | None, typer.Option("--run", help="Run to record the events in (default health-<host>).")
    ] = None,
    size: Annotated[
        int | None, typer.Option("--size", help="Matrix size (default 8192 GPU, 512 CPU).")
    ] = None,
    min_fraction: Annotated[
        float, typer.Option("--min-fraction", help="Fail a device below this fraction of its peers' speed.")
    ] = 0.8,
) -> int:
    """Multiply, compare and time on each device, check NVML; exit 1 if any device is unhealthy."""
    from wattlog.accounting.ledger import Ledger, Role, describe_url, make_engine
    from wattlog.events import EventCategory, EventKind
    from wattlog.trainer.health import compare_peers, default_devices, exit_code
    from wattlog.trainer.health import health_check as check

    results = compare_peers([check(d, size=size) for d in device or default_devices()], min_fraction)
    console = Console(highlight=False)
    for result in results:
        console.print(result.summary())
    label = run or f"health-{socket.gethostname()}"
    engine = make_engine(db)
    try:
        ledger = Ledger(engine)
        if ledger.find_run(label) is None:
            ledger.start_run(label, project="health", role=Role.DEBUG, host=socket.gethostname())
        for result in results:
            ledger.record_event(
                label,
                EventKind.HEALTH_CHECK,
                time_s=result.end_s,
                category=EventCategory.HEALTH_CHECK,
                payload=result.payload(),
            )
    finally:
        engine.dispose()
    console.print(f"Recorded in run {label} of {describe_url(db)}")
    return exit_code(results)


def register(app: typer.Typer) -> None:
    """Add demo, run and health-check to the root app."""
    app.command()(demo)
    app.command(context_settings={"allow_interspersed_args": False})(run)
    app.command("health-check")(health_check)
