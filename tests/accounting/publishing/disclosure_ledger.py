"""A small project in a real SQLite ledger, runs timed by a fake clock, for the disclosure tests.

Every figure follows from the numbers here: each GPU draws `gpu_w` and its node's CPU `cpu_w`
for the whole run, as hardware counters (band +-5 %).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.jobs import RankReport, report_rank_progress
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Gap, Kind, Source

H0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
HOUR_S = 3600.0


@dataclass(frozen=True, slots=True)
class Spec:
    """One run: `gpus` GPUs at `gpu_w` (plus one CPU at `cpu_w` unless 0) for `hours`."""

    name: str
    role: str
    stage: str
    gpus: int
    hours: float
    gpu_w: float = 600.0
    cpu_w: float = 300.0
    tokens: float | None = None
    flops_per_token: float | None = None
    gap_s: float = 0.0
    source: Source = Source.SAMPLED


PROJECT = (
    Spec("sweep", "ablation", "pretraining", 8, 10.0),
    Spec("pretrain", "final", "pretraining", 16, 100.0, tokens=2.0e11, flops_per_token=4.2e10),
    Spec("sft", "final", "sft", 8, 5.0, tokens=1.0e9, flops_per_token=4.2e10),
    Spec("serve", "final", "inference", 8, 24.0),
)


def seeded(tmp_path: Path, specs: tuple[Spec, ...] = PROJECT, site: str = "jupiter") -> tuple[Ledger, str]:
    """A ledger holding `specs` as project "p", run after run; returns it and its URL."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    clock = FakeClock(wall_offset_s=H0)
    ledger = Ledger(make_engine(url), clock=clock)
    for spec in specs:
        run = ledger.start_run(
            spec.name,
            RunSpec(
                project="p", role=spec.role, model="m-7b", site=site, stage=spec.stage, device_model="H100"
            ),
        )
        t0, t1 = clock.wall(), clock.wall() + spec.hours * HOUR_S
        rows = [_row(f"GPU-{g}", Kind.GPU, spec.gpu_w, t0, t1, spec.source) for g in range(spec.gpus)]
        if spec.cpu_w:
            rows.append(_row("cpu", Kind.CPU, spec.cpu_w, t0, t1, spec.source))
        gaps = [Gap("node0", "GPU-0", t1 - spec.gap_s, t1, "sensor lost")] if spec.gap_s else []
        ledger.record_intervals(run.id if run.id is not None else spec.name, rows, gaps)
        if spec.tokens is not None:
            report = RankReport("node0", 0, spec.tokens, 100, t0, flops_per_token=spec.flops_per_token)
            report_rank_progress(ledger, spec.name, 0, report)
        clock.advance(spec.hours * HOUR_S)
        ledger.end_run(spec.name)
        clock.advance(HOUR_S)
    return ledger, url


def _row(device: str, kind: Kind, power_w: float, t0: float, t1: float, source: Source) -> EnergyInterval:
    joules = power_w * (t1 - t0)
    return EnergyInterval.of("node0", device, kind, source, t0, t1, joules, joules * 0.95, joules * 1.05)
