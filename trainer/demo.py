"""`wattlog demo`: train the small GPT for about a minute under the Tracker, then show its footprint.

It ends as `wattlog run` does: five lines (the steps trained, the energy with its band and source,
CO2 and water, the ledger, the command that prints the full table); ``--table`` prints the run
beside Table 19 and its energy split instead.

On a machine without GPUs or RAPL the node's energy is the labelled CPU/DRAM
estimate; ``--simulate-gpus N`` adds simulated GPUs (labelled simulated).
SIGTERM (preemption) or SIGINT stops training at the next step: the run is
closed as preempted (or killed) with its last interval flushed, the report is
printed, and the exit code is 128 + the signal's number.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from wattlog.accounting.carbon.sites import get_site, run_catalog
from wattlog.accounting.devices import device_catalog
from wattlog.accounting.ledger import describe_url
from wattlog.accounting.ledger.completeness import Completeness
from wattlog.accounting.publishing.run_report import print_run_end
from wattlog.accounting.units import readable
from wattlog.errors import LedgerError
from wattlog.numbers import MAX_SIMULATED_GPUS, check_number, check_port
from wattlog.records import Kind, Source
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors import DiscoveryConfig, discover
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.supervise import StopRequested, Supervisor
from wattlog.telemetry.types import DeviceEnergy
from wattlog.trainer.callbacks import SpeedCallback
from wattlog.trainer.example import GPT, ByteTokenizer, batches, generate_corpus, preset
from wattlog.trainer.tracker import Tracker


@dataclass
class DemoConfig:
    """Settings of `wattlog demo`."""

    seconds: float = 60.0
    """How long to train (wall clock)."""
    run: str | None = None
    """Run name; None = demo-<UTC time>."""
    site: str = "world"
    """Site from the catalog (`wattlog sites`)."""
    model: str = "gpt-small"
    """Model preset (gpt-small, gpt-tiny)."""
    db: str | None = None
    """Ledger URL; None = $WATTLOG_DB or the user's ledger."""
    simulate_gpus: int = 0
    """Simulated GPUs to add to the node (labelled simulated)."""
    port: int = 0
    """Metrics port on 127.0.0.1 (0 = any free port)."""
    batch_size: int = 8
    """Sequences per step."""
    log_every: int = 10
    """Steps between moves of the metrics to the host."""
    seed: int = 0
    """Seed of the corpus, the windows and the weights."""
    flush_s: float = 5.0
    """Seconds between ledger writes of the energy."""
    phase: str = ""
    """development or final ("" = from the role)."""
    stage: str = "pretraining"
    """What the run does (pretraining, sft, ...)."""
    scale_group: str = ""
    """Scale group of the project tables (e.g. "tiny")."""
    device_model: str = ""
    """Accelerator model (embodied figures, power limit)."""
    table: bool = False
    """End with the run beside Table 19 and its energy split (default: five lines)."""
    verbose: bool = False
    """Say why each kind of device was not found (default: one line naming them)."""

    def __post_init__(self) -> None:
        """Validate the settings before anything starts."""
        # a demo is about a minute: a day is far beyond any sensible value, inf or NaN never one
        check_number("--seconds", self.seconds, low=0, high=86_400, low_open=True, hint="e.g. 60")
        check_port("--port", self.port)
        check_number("--simulate-gpus", self.simulate_gpus, low=0, high=MAX_SIMULATED_GPUS)
        check_number("--batch-size", self.batch_size, low=1, high=65_536)
        preset(self.model)
        get_site(self.site, run_catalog())  # a site of $WATTLOG_SITES_FILE too, as the run takes it


def run_demo(config: DemoConfig, console: Console | None = None) -> int:
    """Train, print the footprint; returns the exit code (0, or 128 + N when stopped by signal N)."""
    with Supervisor() as supervisor:
        return _demo(config, console or Console(), supervisor)


def _demo(config: DemoConfig, console: Console, supervisor: Supervisor) -> int:
    torch.manual_seed(config.seed)
    model_config = preset(config.model)
    run = config.run or time.strftime("demo-%Y%m%d-%H%M%S", time.gmtime())
    tokens = ByteTokenizer().encode(generate_corpus(20_000, seed=config.seed))
    data = batches(tokens, config.batch_size, model_config.context, seed=config.seed)
    model = GPT(model_config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    # A short linear warm-up: without it the first steps at full rate spike (and the detectors say so).
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 50))
    simulated = simulated_gpus(config.simulate_gpus, t0_s=time.monotonic(), seed=config.seed)
    found = discover(DiscoveryConfig(extra=[SimulatedSensor(simulated)] if simulated else []))
    for line in not_found_lines(found.notes, verbose=config.verbose):
        console.print(line, style="dim", markup=False, soft_wrap=True)  # a note may hold pip's [extra]
    flush_s = min(config.flush_s, max(0.5, config.seconds / 4))
    tracker = Tracker(
        run,
        site=config.site,
        model=config.model,
        project="demo",
        db=config.db,
        log_every=config.log_every,
        flops_per_token=model_config.flops_per_token(),
        watch=model.final_layer,
        health_check=True,
        handle_signals=False,  # the supervisor stops training at a step boundary instead
        sensors=list(found.sensors),
        agent_config=AgentConfig(port=config.port, flush_s=flush_s),
        config={"model": config.model, "params": model.num_params(), "batch_size": config.batch_size},
        progress_every_s=min(30.0, flush_s),
        phase=config.phase,
        stage=config.stage,
        scale_group=config.scale_group,
        device_model=config.device_model,
        quiet=True,  # the demo prints its ending itself, after the training line
    )
    code = 0
    try:
        _track(tracker, model, optimizer, warmup, data, config, console, supervisor)
    except StopRequested as stopped:
        code = stopped.exit_code
        console.print(f"Stopped by {stopped.signum.name}: training ended at step {tracker.current_step}.")
    t = tracker
    recorded = f"; {t.summary.recorded_part()}" if t.summary is not None else ""
    console.print(f"Trained {t.current_step} steps; run {run} {t.status}{recorded}.", soft_wrap=True)
    if t.ledger is not None:  # five lines in all, as `wattlog run` ends (--table: the run beside Table 19)
        print_run_end(t.ledger, run, config.db, table=config.table, console=console)
    else:
        console.print(f"Ledger: {describe_url(config.db)}", soft_wrap=True)
    done = t.summary.done if t.summary is not None else Completeness()
    if not done.complete:  # the figures above are not final: say why, and fail
        console.print(f"[bold red]INCOMPLETE:[/] the figures of {run} above are not final.")
        if code == 0:  # a stop by signal keeps its 128 + N; the line above says what is missing
            raise LedgerError(f"run {run} is incomplete: {done.why()}")
    return code


def _track(
    tracker: Tracker,
    model: GPT,
    optimizer: torch.optim.Optimizer,
    warmup: torch.optim.lr_scheduler.LRScheduler,
    data: object,
    config: DemoConfig,
    console: Console,
    supervisor: Supervisor,
) -> None:
    with tracker as t:
        assert t.health is not None
        # MFU only against a published peak: the health check's matmul rate is no peak (training beat
        # it, and MFU read 132-253 %); a device the catalog does not hold has no MFU.
        t.callback(SpeedCallback).peak_flops, why = published_peak(t.snapshot())
        devices = escape(", ".join(_label(d.device.name, str(d.device.source)) for d in t.snapshot()))
        params_m = model.num_params() / 1e6
        console.print(f"Model {config.model}: {params_m:.2f} M parameters; measuring {devices}")
        console.print(f"Health check: {t.health.summary()}")
        console.print(why)
        console.print(
            f"Metrics on [bold]{t.metrics_url}[/] (Prometheus can scrape it while the demo runs)",
            soft_wrap=True,
        )
        _train(t, model, optimizer, warmup, data, config.seconds, console, supervisor)
        t.drain()


def _train(
    t: Tracker,
    model: GPT,
    optimizer: torch.optim.Optimizer,
    warmup: torch.optim.lr_scheduler.LRScheduler,
    data: object,
    seconds: float,
    console: Console,
    supervisor: Supervisor,
) -> None:
    columns = (
        TextColumn("[bold]step {task.fields[step]}"),
        BarColumn(),
        TextColumn("loss {task.fields[loss]}"),  # each field labelled, its unit with its value or "-"
        TextColumn("speed {task.fields[tps]}"),
        TextColumn("power {task.fields[watts]}"),
        TextColumn("energy {task.fields[energy]}"),
        TimeElapsedColumn(),
    )
    fields: dict[str, Any] = {"step": 0, "loss": "-", "tps": "-", "watts": "-", "energy": "-"}
    model.train()
    end_s = time.monotonic() + seconds
    next_view_s = 0.0
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("train", total=seconds, **fields)
        while (now_s := time.monotonic()) < end_s:
            supervisor.check()  # a stop signal ends training here, between two steps
            x, y = next(data)  # type: ignore[call-overload]
            _, loss = model(x, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            warmup.step()
            t.step(loss=loss, tokens=x.numel(), grad_norm=grad_norm)
            if now_s >= next_view_s:
                next_view_s = now_s + 0.25
                progress.update(task, completed=seconds - (end_s - now_s), **_view(t))
        progress.update(task, completed=seconds, **_view(t))


def _view(t: Tracker) -> dict[str, Any]:
    """Progress fields from what the bookkeeping thread already turned into Python values."""
    latest, speed, power, energy = t.latest, t.speed, t.power_w(), t.energy_j()
    return {
        "step": t.current_step,
        "loss": f"{latest.values['loss']:.3f}" if latest and "loss" in latest.values else "-",
        "tps": f"{speed.tokens_per_s:,.0f} tok/s" if speed else "-",
        "watts": readable(power, "power") if power is not None else "-",
        "energy": readable(energy, "energy") if energy is not None else "-",
    }


def not_found_lines(notes: Sequence[str], *, verbose: bool) -> list[str]:
    """What was looked for and not found: one line naming each (``--verbose``: every note whole).

    >>> not_found_lines(["NVIDIA: no driver found", "RAPL: no powercap tree"], verbose=False)
    ['Not found: NVIDIA, RAPL (why: wattlog demo --verbose, or wattlog sensors)']
    """
    if verbose or not notes:
        return list(notes)
    names = ", ".join(dict.fromkeys(note.split(":", 1)[0] for note in notes))
    return [f"Not found: {names} (why: wattlog demo --verbose, or wattlog sensors)"]


def published_peak(devices: Sequence[DeviceEnergy]) -> tuple[float | None, str]:
    """The published peak FLOP/s of the GPUs that train, from the device catalog, and a line saying so.

    None, with the reason, when a GPU is not in the catalog or there is none (a CPU run; simulated
    GPUs draw simulated power but compute nothing).
    """
    gpus = [d.device for d in devices if d.device.kind == Kind.GPU and d.device.source != Source.SIMULATED]
    catalog = device_catalog()
    peaks = [(gpu.name, model.peak_flops if (model := catalog.named_in(gpu.name)) else None) for gpu in gpus]
    unknown = [name for name, peak in peaks if peak is None]
    if not gpus or unknown:
        what = unknown[0] if unknown else "a CPU"
        return None, f"MFU: - (no published peak FLOP/s for {what} in the device catalog)"
    total = sum(peak for _, peak in peaks if peak is not None)
    return (
        total,
        f"MFU against {total / 1e12:,.0f} TFLOP/s: the published dense BF16 peak of {len(gpus)} GPU(s)",
    )


def _label(name: str, source: str) -> str:
    """A device's name with its source label, once."""
    return name if source in name else f"{name} [{source}]"
