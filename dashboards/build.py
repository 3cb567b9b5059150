"""wattlog's Grafana dashboards as code: `python -m wattlog.dashboards.build [--check]`.

Writes dashboards/grafana/*.json and dashboards/prometheus/sites.rules.yml (committed,
so a diff shows what changed); with `--check` it writes nothing and exits 1 when the
committed files differ from what this code generates (tests/dashboards/test_build.py).

Footprint panels (CO2, water, projections) read recording rules from
dashboards/prometheus/rules.yml rather than repeating the formulas in PromQL here:
`wattlog:run_co2_tonnes` = MWh x PUE x intensity, with the site's PUE, WUE and
intensity published as `wattlog:site_*` constants by sites.rules.yml (generated
from accounting's site catalog by dashboards.siterules). Alerts and panels thus
use one formula, the paper's (DESIGN.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from wattlog.accounting.sites import builtin_sites
from wattlog.dashboards.panels import (
    DS,
    SELECTOR,
    dashboard,
    datasource_variable,
    layout,
    power_fluctuation_panels,
    query_variable,
    row,
    stat,
    state_timeline,
    table,
    target,
    timeseries,
)
from wattlog.dashboards.siterules import site_rules
from wattlog.metric_names import MetricName

ROOT = Path(__file__).parent
RUN_SITE = 'run=~"$run", site=~"$site"'
TOKENS_PER_JOULE = (
    f"sum by (run) (rate({MetricName.TRAIN_TOKENS_TOTAL}{{{SELECTOR}}}[5m])) / on (run) "
    f"sum by (run) (rate({MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}}[5m]))"
)


def _variables() -> list[dict]:
    metric = MetricName.ENERGY_JOULES_TOTAL
    return [
        datasource_variable(),
        query_variable("run", "Run", f"label_values({metric}, run)"),
        query_variable("host", "Host", f'label_values({metric}{{run=~"$run"}}, host)'),
        query_variable("site", "Site", f'label_values({metric}{{run=~"$run"}}, site)'),
    ]


def _events_annotation() -> dict:
    """wattlog's events (restarts, spikes, health checks) as annotations, from the trainer's counter."""
    return {
        "name": "wattlog events",
        "datasource": DS,
        "enable": True,
        "hide": False,
        "iconColor": "purple",
        "expr": f"increase({MetricName.TRAIN_EVENTS_TOTAL}{{{SELECTOR}}}[$__interval]) > 0",
        "step": "30s",
        "titleFormat": "{{kind}}",
        "textFormat": "{{run}} on {{host}}",
        "tagKeys": "kind,run",
        "useValueForTime": False,
    }


# `up` has no run label (the agent exports it, not the target): keep the targets whose agent reported a
# selected run, host and site in the last hour, by the agent's own labels (a target's host label that
# differs from the agent's cannot empty the panel). `and` matches any number of runs per target.
AGENTS_UP = (
    'max by (instance, host) (up{job="wattlog"}) and on (instance) '
    f"max by (instance) (last_over_time({MetricName.AGENT_FINISHED}{{{SELECTOR}}}[1h]))"
)


def energy_dashboard() -> dict:
    """Power, energy, CO2 and water of the selected runs and the sampler's health."""
    power = f"{MetricName.POWER_WATTS}{{{SELECTOR}}}"
    energy = f"{MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}}"
    panels = [
        (row("Power now"), 24, 1),
        (
            stat(
                "Cluster power",
                [target(f"sum by (source) ({power})", "{{source}}")],
                "watt",
                "Sum of every device's latest power reading, per source label.",
            ),
            6,
            5,
        ),
        (timeseries("Power by node", [target(f"sum by (host) ({power})", "{{host}}")], "watt"), 9, 8),
        (
            timeseries(
                "Power by GPU",
                [target(f'{MetricName.POWER_WATTS}{{kind="gpu", {SELECTOR}}}', "{{host}} {{device}}")],
                "watt",
            ),
            9,
            8,
        ),
        (row("Energy, carbon and water"), 24, 1),
        (
            stat(
                "Energy so far",
                [target(f"sum by (source) ({energy}) / 3600", "{{source}}")],
                "watth",
                "IT energy measured since the agents started, per source "
                "(counter, sampled, estimated, simulated). PUE is not folded in.",
            ),
            6,
            6,
        ),
        (
            stat(
                "CO2 so far and projected",
                [
                    target(
                        f"sum by (run, intensity_source) (wattlog:run_co2_tonnes{{{RUN_SITE}}}) * 1e6",
                        "{{run}} so far ({{intensity_source}})",
                    ),
                    target(
                        f"sum by (run) (wattlog:run_co2_projected_tonnes{{{RUN_SITE}}}) * 1e6",
                        "{{run}} at end",
                        "B",
                    ),
                ],
                "massg",
                "CO2eq = MWh x PUE x carbon intensity of the run's site (recording rules); the legend names "
                "the intensity's source. Projected = so far / share of planned tokens done "
                f"({MetricName.RUN_PLANNED_TOKENS}).",
            ),
            6,
            6,
        ),
        (
            stat(
                "Water so far and projected",
                [
                    target(
                        f"sum by (run) (wattlog:run_water_kilolitres{{{RUN_SITE}}}) * 1000", "{{run}} so far"
                    ),
                    target(
                        f"sum by (run) (wattlog:run_water_projected_kilolitres{{{RUN_SITE}}}) * 1000",
                        "{{run}} at end",
                        "B",
                    ),
                ],
                "litre",
                "MWh x PUE x (WUE on-site + off-site), the OLMo 2 paper's convention; "
                "a site's range is taken at its upper end (sites.rules.yml).",
            ),
            6,
            6,
        ),
        (
            stat(
                "Tokens per joule",
                [target(TOKENS_PER_JOULE, "{{run}}")],
                "none",
                "Training tokens per joule of IT energy over the last 5 minutes.",
                decimals=3,
            ),
            6,
            6,
        ),
        (
            table(
                "Energy by device and source",
                [target(energy, instant=True, fmt="table")],
                "joule",
                "Cumulative energy per device, with the source label of each figure.",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Cumulative energy",
                [target(f"sum by (run, source) ({energy}) / 3600", "{{run}} {{source}}")],
                "watth",
            ),
            12,
            8,
        ),
        (row("Sampler health"), 24, 1),
        (timeseries("Agents up", [target(AGENTS_UP, "{{host}} {{instance}}")], "none"), 6, 7),
        (
            timeseries(
                "Samples per second",
                [target(f"rate({MetricName.SAMPLES_TOTAL}{{{SELECTOR}}}[1m])", "{{host}}")],
                "hertz",
            ),
            6,
            7,
        ),
        (
            timeseries(
                "Overruns per minute",
                [target(f"60 * rate({MetricName.SAMPLE_OVERRUNS_TOTAL}{{{SELECTOR}}}[5m])", "{{host}}")],
                "none",
            ),
            6,
            7,
        ),
        (
            timeseries(
                "Tick lateness",
                [target(f"{MetricName.SAMPLE_LATENESS_SECONDS}{{{SELECTOR}}}", "{{host}} {{stat}}")],
                "s",
            ),
            6,
            7,
        ),
        *power_fluctuation_panels(SELECTOR),
    ]
    return dashboard(
        "wattlog-energy",
        "wattlog: energy, carbon and water",
        layout(panels),
        variables=_variables(),
        annotations=[_events_annotation()],
        description="Live power and energy of training runs as wattlog measures them, "
        "with CO2 and water from the run's site.",
    )


def devices_dashboard() -> dict:
    """Each GPU's power as a row of its own, the energy's band, gaps, read errors and lost devices."""
    gpu_power = f'{MetricName.POWER_WATTS}{{kind="gpu", {SELECTOR}}}'
    panels = [
        (row("Per-GPU power"), 24, 1),
        (
            state_timeline(
                "Per-GPU power",
                [target(gpu_power, "{{host}} {{device}}")],
                "watt",
                "One row per GPU, coloured by power: idle, throttled or lost GPUs stand out.",
            ),
            24,
            10,
        ),
        (row("How sure the energy is"), 24, 1),
        (
            timeseries(
                "Energy and its band",
                [
                    target(
                        f"sum by (run) ({MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}})",
                        "{{run}} best estimate",
                    ),
                    target(
                        f"sum by (run, bound) ({MetricName.ENERGY_UNCERTAINTY_JOULES}{{{SELECTOR}}})",
                        "{{run}} {{bound}}",
                        "B",
                    ),
                ],
                "joule",
                "Best estimate with the low and high ends of its band (sensor accuracy, sampling, gaps).",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Gaps (seconds not measured)",
                [target(f"{MetricName.GAP_SECONDS_TOTAL}{{{SELECTOR}}}", "{{host}} {{device}}")],
                "s",
                "Seconds inside recorded gaps per device: failed reads, a lost device, late readings. "
                "Never interpolated over.",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Gaps and read errors per minute",
                [
                    target(
                        f"60 * rate({MetricName.GAPS_TOTAL}{{{SELECTOR}}}[5m])", "gaps {{host}} {{device}}"
                    ),
                    target(
                        f"60 * rate({MetricName.SAMPLE_ERRORS_TOTAL}{{{SELECTOR}}}[5m])",
                        "read errors {{host}}",
                        "B",
                    ),
                ],
                "none",
            ),
            12,
            8,
        ),
        (
            stat(
                "Lost devices",
                [target(f"sum by (host) ({MetricName.DEVICE_LOST}{{{SELECTOR}}})", "{{host}}")],
                "none",
                "Devices the agent marked lost (fell off the bus, stopped answering), per host.",
                decimals=0,
            ),
            12,
            8,
        ),
    ]
    return dashboard(
        "wattlog-devices",
        "wattlog: devices, gaps and band",
        layout(panels),
        variables=_variables(),
        annotations=[_events_annotation()],
        description="Per-GPU power, the energy's uncertainty band, recorded gaps and lost devices.",
    )


def training_dashboard() -> dict:
    """Training health (loss, grad norm, loss scale, throughput, MFU) with wattlog's events as annotations."""

    def series(metric: str) -> list[dict]:
        return [target(f"{metric}{{{SELECTOR}}}", "{{run}} {{host}} rank {{rank}}")]

    panels = [
        (row("Training health"), 24, 1),
        (timeseries("Loss", series(MetricName.TRAIN_LOSS), "none"), 12, 8),
        (timeseries("Gradient norm", series(MetricName.TRAIN_GRAD_NORM), "none"), 12, 8),
        (
            timeseries(
                "Loss scale",
                series(MetricName.TRAIN_LOSS_SCALE),
                "none",
                "A dynamic loss scale falling toward zero precedes divergence (OPT).",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Events per kind",
                [
                    target(
                        f"sum by (kind) (increase({MetricName.TRAIN_EVENTS_TOTAL}{{{SELECTOR}}}[5m]))",
                        "{{kind}}",
                    )
                ],
                "none",
                "Loss spikes, grad-norm spikes, loss-scale collapses, non-finite values, restarts "
                "(every kind exported at 0 from the start, so the first event counts).",
            ),
            12,
            8,
        ),
        (row("Throughput and efficiency"), 24, 1),
        (
            timeseries(
                "Tokens per second",
                [
                    target(
                        f"sum by (run) (rate({MetricName.TRAIN_TOKENS_TOTAL}{{{SELECTOR}}}[1m]))", "{{run}}"
                    )
                ],
                "none",
            ),
            8,
            8,
        ),
        (timeseries("Tokens per joule", [target(TOKENS_PER_JOULE, "{{run}}")], "none"), 8, 8),
        (
            timeseries(
                "MFU",
                series(MetricName.TRAIN_MFU_RATIO),
                "percentunit",
                "Model FLOPs utilisation: achieved training FLOP/s over the devices' peak "
                "(needs flops_per_token and peak_flops).",
            ),
            8,
            8,
        ),
        (row("Agents"), 24, 1),
        (timeseries("Agents up", [target(AGENTS_UP, "{{host}} {{instance}}")], "none"), 24, 6),
    ]
    return dashboard(
        "wattlog-training",
        "wattlog: training health",
        layout(panels),
        variables=_variables(),
        annotations=[_events_annotation()],
        description="Loss, gradient norm and loss scale of wattlog-tracked runs, "
        "with its events as annotations.",
    )


BOARDS = {
    "wattlog-energy.json": energy_dashboard,
    "wattlog-devices.json": devices_dashboard,
    "wattlog-training.json": training_dashboard,
}


def render() -> dict[str, str]:
    """Every generated file, as {path under dashboards/: text}, exactly as written."""
    boards = {name: build_board() for name, build_board in BOARDS.items()}
    out = {
        f"grafana/{name}": json.dumps(board, indent=2, sort_keys=True) + "\n"
        for name, board in boards.items()
    }
    out["prometheus/sites.rules.yml"] = site_rules(builtin_sites())
    return out


def write(root: Path = ROOT) -> list[Path]:
    """Write every generated file under `root`; returns the paths written."""
    paths = []
    for name, text in render().items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def stale(root: Path = ROOT) -> list[str]:
    """Paths under `root` that are missing or differ from what the code generates."""
    return [
        name
        for name, text in render().items()
        if not (root / name).is_file() or (root / name).read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m wattlog.dashboards.build`; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m wattlog.dashboards.build", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed file is stale")
    parser.add_argument("--out", type=Path, default=ROOT, help="root of the generated files (dashboards/)")
    args = parser.parse_args(argv)
    if args.check:
        names = stale(args.out)
        for name in names:
            fix = "run `python -m wattlog.dashboards.build`"
            print(f"{args.out / name} differs from the code: {fix}", file=sys.stderr)
        return 1 if names else 0
    for path in write(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
