"""A seeded example project: development runs by scale group and final runs by stage, in a real ledger.

It shows what `wattlog table --project P --by group|stage|phase` prints without
a cluster: every run is written as GPU energy rows (one per GPU per hour) of a
constant power, so its figures follow from the numbers here. The energy is
labelled simulated; nothing here is a measurement, and the sizes are made up.
"""

from __future__ import annotations

from dataclasses import dataclass

from wattlog.accounting.ledger.runs import RunSpec
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.units import HOUR_S
from wattlog.records import EnergyInterval, Kind, Source


@dataclass(frozen=True, slots=True)
class ExampleRun:
    """One run of the example: `gpus` H100s at `power_w` each for `hours` (one energy row per GPU)."""

    name: str
    role: str
    stage: str
    group: str
    gpus: int
    hours: int
    power_w: float = 500.0
    requests: int | None = None


EXAMPLE_RUNS = (
    *(ExampleRun(f"sweep-1b-{i}", "ablation", "pretraining", "1B", 32, 120) for i in range(5)),
    *(ExampleRun(f"ablation-7b-{i}", "ablation", "pretraining", "7B", 64, 200) for i in range(3)),
    ExampleRun("crash-13b", "failed", "pretraining", "13B", 128, 150),
    ExampleRun("debug-7b", "debug", "debugging", "7B", 16, 10, power_w=200.0),
    ExampleRun("final-7b", "final", "pretraining", "7B", 128, 500),
    ExampleRun("final-7b-sft", "final", "sft", "7B", 32, 20),
    ExampleRun("final-7b-dpo", "final", "dpo", "7B", 32, 10),
    ExampleRun("final-7b-rl", "final", "rl", "7B", 64, 60),
    ExampleRun("serve-7b", "final", "inference", "7B", 8, 24, power_w=350.0, requests=2_000_000),
)
"""Development: 1B sweeps, 7B ablations, a failed 13B run, a debug run; final: 7B pre- and post-training."""


def seed_example_project(
    ledger: Ledger, project: str = "example", *, site: str = "jupiter", start_s: float = 1_767_225_600.0
) -> list[str]:
    """Write the example runs into `ledger` (runs back to back from `start_s`); returns their names."""
    t = start_s
    names = []
    for spec in EXAMPLE_RUNS:
        run = ledger.start_run(
            spec.name,
            RunSpec(
                project=project,
                role=spec.role,
                model=f"example {spec.group}",
                site=site,
                stage=spec.stage,
                scale_group=spec.group,
                device_model="H100",
            ),
            start_s=t,  # the run's times are its rows' (a report read "00:45:49 to 00:45:50" for 500 h)
        )
        rows = [
            EnergyInterval.of(
                f"node{g // 8}",
                f"GPU-{g}",
                Kind.GPU,
                Source.SIMULATED,
                t,
                t + spec.hours * HOUR_S,
                joules,
                joules * 0.95,
                joules * 1.05,
            )  # fmt: skip
            for g in range(spec.gpus)
            if (joules := spec.power_w * spec.hours * HOUR_S)
        ]
        ledger.record_intervals(run.id if run.id is not None else spec.name, rows)
        if spec.requests is not None:
            ledger.set_run_figures(spec.name, requests=spec.requests)
        ledger.end_run(spec.name, end_s=t + spec.hours * HOUR_S)
        t += spec.hours * HOUR_S
        names.append(spec.name)
    return names
