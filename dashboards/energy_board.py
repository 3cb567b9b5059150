"""The energy board: power now, energy, CO2 and water of the selected runs, and the sampler's health.

Footprint panels (CO2, water, projections) read recording rules from
dashboards/prometheus/rules.yml rather than repeating the formulas in PromQL here:
`wattlog:run_co2_tonnes` = MWh x PUE x intensity, with the site's PUE, WUE and
intensity published as `wattlog:site_*` constants by sites.rules.yml (generated
from accounting's site catalog by dashboards.siterules). Alerts and panels thus
use one formula, the paper's (DESIGN.md).
"""

from __future__ import annotations

from wattlog.dashboards.panels import (
    SELECTOR,
    Panel,
    power_fluctuation_panels,
    row,
    stat,
    table,
    target,
    timeseries,
)
from wattlog.dashboards.queries import (
    AGENTS_UP,
    RUN_SITE,
    TOKENS_PER_JOULE,
    board,
)
from wattlog.metric_names import MetricName

POWER = f"{MetricName.POWER_WATTS}{{{SELECTOR}}}"
ENERGY = f"{MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}}"


def energy_dashboard() -> dict:
    """Power, energy, CO2 and water of the selected runs and the sampler's health."""
    panels = [
        *_power_now(),
        *_energy_and_carbon(),
        *_water_and_efficiency(),
        *_energy_by_device(),
        *_sampler_health(),
        *power_fluctuation_panels(SELECTOR),
    ]
    return board(
        "wattlog-energy",
        "wattlog: energy, carbon and water",
        panels,
        "Live power and energy of training runs as wattlog measures them, "
        "with CO2 and water from the run's site.",
    )


def _power_now() -> list[tuple[Panel, int, int]]:
    """Cluster power, power by node and by GPU."""
    return [
        (row("Power now"), 24, 1),
        (
            stat(
                "Cluster power",
                [target(f"sum by (source) ({POWER})", "{{source}}")],
                "watt",
                "Sum of every device's latest power reading, per source label.",
            ),
            6,
            5,
        ),
        (timeseries("Power by node", [target(f"sum by (host) ({POWER})", "{{host}}")], "watt"), 9, 8),
        (
            timeseries(
                "Power by GPU",
                [target(f'{MetricName.POWER_WATTS}{{kind="gpu", {SELECTOR}}}', "{{host}} {{device}}")],
                "watt",
            ),
            9,
            8,
        ),
    ]


def _energy_and_carbon() -> list[tuple[Panel, int, int]]:
    """Energy so far per source, and CO2 so far and projected."""
    return [
        (row("Energy, carbon and water"), 24, 1),
        (
            stat(
                "Energy so far",
                [target(f"sum by (source) ({ENERGY}) / 3600", "{{source}}")],
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
    ]


def _water_and_efficiency() -> list[tuple[Panel, int, int]]:
    """Water so far and projected, and tokens per joule."""
    return [
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
    ]


def _energy_by_device() -> list[tuple[Panel, int, int]]:
    """Energy per device with its source, and cumulative energy."""
    return [
        (
            table(
                "Energy by device and source",
                [target(ENERGY, instant=True, fmt="table")],
                "joule",
                "Cumulative energy per device, with the source label of each figure.",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Cumulative energy",
                [target(f"sum by (run, source) ({ENERGY}) / 3600", "{{run}} {{source}}")],
                "watth",
            ),
            12,
            8,
        ),
    ]


def _sampler_health() -> list[tuple[Panel, int, int]]:
    """Agents up, samples per second, overruns and tick lateness."""
    return [
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
    ]
