"""The trainer's commands: `wattlog demo`, `wattlog run -- COMMAND` and `wattlog health-check`."""

from __future__ import annotations

import socket
import time
from typing import Annotated

import typer
from rich.console import Console

from wattlog.errors import ConfigError
from wattlog.numbers import check_number, check_port
from wattlog.options import (
    CommandArgument,
    DbOption,
    FlushOption,
    LocalPortOption,
    LockDirOption,
    ProjectOption,
    SampleNodesOption,
    SiteOption,
)

PhaseOption = Annotated[
    str,
    typer.Option("--phase", help="development or final (default: final for role final, else development)."),
]
StageOption = Annotated[
    str,
    typer.Option(
        "--stage", help="pretraining, mid-training, sft, dpo, rl, evaluation, inference or debugging."
    ),
]
GroupOption = Annotated[str, typer.Option("--group", help="Scale group, e.g. 7B (the project tables' rows).")]
DeviceModelOption = Annotated[
    str, typer.Option("--device-model", help="Accelerator model, e.g. H100 (embodied figures, power limit).")
]
GpuHoursOption = Annotated[
    float | None,
    typer.Option("--gpu-hours", min=0, help="GPU-hours of the run (default: derived from its GPU rows)."),
]
RequestsOption = Annotated[
    int | None, typer.Option("--requests", min=0, help="Requests served (an inference run: break-even).")
]
TableOption = Annotated[
    bool, typer.Option("--table", help="End with the run beside Table 19 (default: five lines).")
]
HEALTH_SITE = "world"
"""The site a health-check run is recorded with: the labelled, sourced world average (`wattlog sites`)."""
RoleOption = Annotated[
    str,
    typer.Option(
        "--role",
        help="development, final (a Table 19 row), ablation, baseline, failed or debug; "
        "`wattlog runs relabel` changes it later.",
    ),
]


def demo(
    seconds: Annotated[float, typer.Option("--seconds", help="How long to train, seconds.")] = 60.0,
    run: Annotated[str | None, typer.Option("--run", help="Run name (default demo-<UTC time>).")] = None,
    site: SiteOption = "world",
    model: Annotated[str, typer.Option("--model", help="gpt-small or gpt-tiny.")] = "gpt-small",
    db: DbOption = None,
    simulate_gpus: Annotated[
        int, typer.Option("--simulate-gpus", help="Add N simulated GPUs (labelled simulated).")
    ] = 0,
    port: LocalPortOption = 0,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Sequences per step.")] = 8,
    phase: PhaseOption = "",
    stage: StageOption = "pretraining",
    group: GroupOption = "",
    device_model: DeviceModelOption = "",
    table: TableOption = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Say why each kind of device was not found (else one line).")
    ] = False,
) -> int:
    """Train a small GPT for a minute under the tracker, print its footprint (--table: beside Table 19)."""
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
        phase=phase,
        stage=stage,
        scale_group=group,
        device_model=device_model,
        table=table,
        verbose=verbose,
    )
    return run_demo(config)


def run(
    command: CommandArgument = None,
    name: Annotated[str | None, typer.Option("--run", help="Run name (default run-<UTC time>).")] = None,
    site: SiteOption = "world",
    db: DbOption = None,
    port: LocalPortOption = 0,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue the run of that name (a restart); without it, a taken name runs as NAME-2.",
        ),
    ] = False,
    sample_nodes: SampleNodesOption = None,
    project: ProjectOption = "default",
    role: RoleOption = "development",
    phase: PhaseOption = "",
    stage: StageOption = "",
    group: GroupOption = "",
    device_model: DeviceModelOption = "",
    gpu_hours: GpuHoursOption = None,
    requests: RequestsOption = None,
    flush_s: FlushOption = 10.0,
    lock_dir: LockDirOption = None,
    table: TableOption = False,
) -> int:
    """Run COMMAND with an agent sampling the node and record the run; exit with its code.

    SIGTERM and SIGINT are forwarded to COMMAND; the run is then closed as preempted (exit 143) or
    killed (130) with its last interval flushed. 127: not found, 126: not executable, 128+N: killed
    by signal N; 75: not every row reached the ledger (kept in the spool for `wattlog replay`).
    """
    from wattlog.telemetry.agent import AgentConfig, default_lock_dir
    from wattlog.trainer.runner import NO_COMMAND, run_command
    from wattlog.trainer.session_config import SessionConfig

    check_number("--flush-s", flush_s, low=0.025, high=86400, hint="the default is 10")
    check_port("--port", port)
    if not command:
        raise ConfigError(NO_COMMAND)  # before the config: the first thing to fix
    agent = AgentConfig(
        port=port, flush_s=flush_s, lock_dir=lock_dir if lock_dir is not None else default_lock_dir()
    )
    config = SessionConfig.from_env(
        name or time.strftime("run-%Y%m%d-%H%M%S", time.gmtime()),
        site=site,
        db=db,
        resume=resume,
        agent_config=agent,
        sample_nodes=sample_nodes,
        project=project,
        role=role,
        phase=phase,
        stage=stage,
        scale_group=group,
        device_model=device_model,
        gpu_hours=gpu_hours,
        requests=requests,
    )
    return run_command(command, config, table=table)


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
    from wattlog.accounting.ledger import Ledger, Role, RunSpec, Stage, Status, describe_url, make_engine
    from wattlog.events import EventCategory, EventKind
    from wattlog.trainer.health import compare_peers, default_devices, exit_code
    from wattlog.trainer.health import health_check as check

    if size is not None:
        check_number("--size", size, low=1, high=65_536, hint="e.g. 512 on a CPU, 8192 on a GPU")
    check_number("--min-fraction", min_fraction, low=0, high=1, low_open=True, hint="e.g. 0.8")
    results = compare_peers([check(d, size=size) for d in device or default_devices()], min_fraction)
    console = Console(highlight=False)
    for result in results:
        console.print(result.summary())
    label = run or f"health-{socket.gethostname()}"
    engine = make_engine(db)
    try:
        ledger = Ledger(engine)
        if ledger.find_run(label) is None:
            # With a site (the world average, labelled as such) so `wattlog table` can show it.
            ledger.start_run(
                label,
                RunSpec(
                    project="health",
                    role=Role.DEBUG,
                    host=socket.gethostname(),
                    site=HEALTH_SITE,
                    stage=Stage.DEBUGGING,
                ),
            )
        for result in results:
            ledger.record_event(
                label,
                EventKind.HEALTH_CHECK,
                time_s=result.end_s,
                category=EventCategory.HEALTH_CHECK,
                payload=result.payload(),
            )
        ledger.end_run(label, Status.FINISHED)
    finally:
        engine.dispose()
    console.print(f"Recorded in run {label} of {describe_url(db)}", soft_wrap=True)
    return exit_code(results)


def register(app: typer.Typer) -> None:
    """Add demo, run and health-check to the root app."""
    app.command()(demo)
    app.command(context_settings={"allow_interspersed_args": False})(run)
    app.command("health-check")(health_check)
