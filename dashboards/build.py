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
    heatmap,
    layout,
    power_fluctuation_panels,
    query_variable,
    row,
    stat,
    table,
    target,
    timeseries,
)
from wattlog.dashboards.siterules import site_rules

ROOT = Path(__file__).parent
RUN_SITE = 'run=~"$run", site=~"$site"'
TOKENS_PER_JOULE = (
    f"sum by (run) (rate(wattlog_train_tokens_total{{{SELECTOR}}}[5m])) / on (run) "
    f"sum by (run) (rate(wattlog_energy_joules_total{{{SELECTOR}}}[5m]))"
)


def _variables() -> list[dict]:
    metric = "wattlog_energy_joules_total"
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
        "iconColor": "red",
        "expr": f"increase(wattlog_train_events_total{{{SELECTOR}}}[$__interval]) > 0",
        "step": "30s",
        "titleFormat": "{{kind}}",
        "textFormat": "{{run}} on {{host}}",
        "tagKeys": "kind,run",
        "useValueForTime": False,
    }


def energy_dashboard() -> dict:
    """Power, energy, CO2 and water of the selected runs, per-GPU power and the sampler's health."""
    power = f"wattlog_power_watts{{{SELECTOR}}}"
    energy = f"wattlog_energy_joules_total{{{SELECTOR}}}"
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
                [target(f'wattlog_power_watts{{kind="gpu", {SELECTOR}}}', "{{host}} {{device}}")],
                "watt",
            ),
            9,
            8,
        ),
        (row("Energy, carbon and water"), 24, 1),
        (
            stat(
                "Energy so far (MWh)",
                [target(f"sum by (source) ({energy}) / 3.6e9", "{{source}}")],
                "suffix: MWh",
                "IT energy measured since the agents started, per source "
                "(counter, sampled, estimated, simulated). PUE is not folded in.",
                decimals=4,
            ),
            6,
            6,
        ),
        (
            stat(
                "CO2 so far and projected (tCO2eq)",
                [
                    target(f"sum by (run) (wattlog:run_co2_tonnes{{{RUN_SITE}}})", "{{run}} so far"),
                    target(
                        f"sum by (run) (wattlog:run_co2_projected_tonnes{{{RUN_SITE}}})",
                        "{{run}} at end",
                        "B",
                    ),
                ],
                "suffix: t",
                "MWh x PUE x carbon intensity of the run's site (recording rules); "
                "projected = so far / share of planned tokens done (wattlog_run_planned_tokens).",
                decimals=3,
            ),
            6,
            6,
        ),
        (
            stat(
                "Water so far and projected (kL)",
                [
                    target(f"sum by (run) (wattlog:run_water_kilolitres{{{RUN_SITE}}})", "{{run}} so far"),
                    target(
                        f"sum by (run) (wattlog:run_water_projected_kilolitres{{{RUN_SITE}}})",
                        "{{run}} at end",
                        "B",
                    ),
                ],
                "suffix: kL",
                "MWh x PUE x (WUE on-site + off-site), the OLMo 2 paper's convention; "
                "a site's range is taken at its upper end (sites.rules.yml).",
                decimals=2,
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
                [target(f"{energy} / 3.6e6", instant=True, fmt="table")],
                "kwatth",
                "Cumulative energy per device, with the source label of each figure.",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Cumulative energy (kWh)",
                [target(f"sum by (run, source) ({energy}) / 3.6e6", "{{run}} {{source}}")],
                "kwatth",
            ),
            12,
            8,
        ),
        (row("Per-GPU power"), 24, 1),
        (
            heatmap(
                "Per-GPU power",
                [
                    target(
                        f'wattlog_power_watts{{kind="gpu", {SELECTOR}}}', "{{host}}/{{device}}", fmt="heatmap"
                    )
                ],
                "watt",
                "One row per GPU, coloured by power: idle or throttled GPUs show as dark stripes.",
            ),
            24,
            9,
        ),
        (row("Sampler health"), 24, 1),
        (timeseries("Agents up", [target(f'up{{job="wattlog", {SELECTOR}}}', "{{host}}")], "none"), 6, 7),
        (
            timeseries(
                "Samples per second",
                [target(f"rate(wattlog_samples_total{{{SELECTOR}}}[1m])", "{{host}}")],
                "hertz",
            ),
            6,
            7,
        ),
        (
            timeseries(
                "Overruns per minute",
                [target(f"60 * rate(wattlog_sample_overruns_total{{{SELECTOR}}}[5m])", "{{host}}")],
                "none",
            ),
            6,
            7,
        ),
        (
            timeseries(
                "Tick lateness",
                [target(f"wattlog_sample_lateness_seconds{{{SELECTOR}}}", "{{host}} {{stat}}")],
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


def training_dashboard() -> dict:
    """Training health (loss, grad norm, loss scale, throughput) with wattlog's events as annotations."""

    def series(metric: str) -> list[dict]:
        return [target(f"{metric}{{{SELECTOR}}}", "{{run}} {{host}}")]

    panels = [
        (row("Training health"), 24, 1),
        (timeseries("Loss", series("wattlog_train_loss"), "none"), 12, 8),
        (timeseries("Gradient norm", series("wattlog_train_grad_norm"), "none"), 12, 8),
        (
            timeseries(
                "Loss scale",
                series("wattlog_train_loss_scale"),
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
                        f"sum by (kind) (increase(wattlog_train_events_total{{{SELECTOR}}}[5m]))", "{{kind}}"
                    )
                ],
                "none",
                "Loss spikes, grad-norm spikes, loss-scale collapses, restarts, health checks.",
            ),
            12,
            8,
        ),
        (row("Throughput and efficiency"), 24, 1),
        (
            timeseries(
                "Tokens per second",
                [target(f"sum by (run) (rate(wattlog_train_tokens_total{{{SELECTOR}}}[1m]))", "{{run}}")],
                "none",
            ),
            12,
            8,
        ),
        (timeseries("Tokens per joule", [target(TOKENS_PER_JOULE, "{{run}}")], "none"), 12, 8),
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


def render() -> dict[str, str]:
    """Every generated file, as {path under dashboards/: text}, exactly as written."""
    boards = {"wattlog-energy.json": energy_dashboard(), "wattlog-training.json": training_dashboard()}
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
