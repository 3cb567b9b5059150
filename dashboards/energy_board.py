"""The energy board: power now, energy, CO2, water and budget of the selected runs, and the sampler's health.

Footprint panels (CO2, water, projections) apply the paper's formula (DESIGN.md) to each raw
counter's last value (dashboards.footprint), with the site's PUE, WUE and intensity published as
`wattlog:site_*` constants by sites.rules.yml (generated from accounting's site catalog by
dashboards.siterules); the recording rules of rules.yml, evaluated every 15 s, would miss a run's
last seconds. Totals read each series' last value in the range (queries.so_far), so finished runs
count; "now" figures read live agents only."""

from __future__ import annotations

from wattlog.dashboards.footprint import CO2_T, INTENSITY, WATER_KL, projected
from wattlog.dashboards.panels import (
    KG,
    KG_FIXED,
    KG_PER_KWH,
    SELECTOR,
    TOK_PER_J,
    Panel,
    T,
    no_value,
    power_fluctuation_panels,
    report_link,
    row,
    stat,
    table,
    target,
    timeseries,
    tonnes,
    unit_by_ref,
)
from wattlog.dashboards.queries import NONE_LIVE, agents_panel, board, live, so_far
from wattlog.metric_names import MetricName

POWER = f"{MetricName.POWER_WATTS}{{{SELECTOR}}}"
ENERGY = f"{MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}}"
CO2_SO_FAR = CO2_T
CO2_PROJECTED = projected(CO2_T)
BUDGET = "max by (run) (" + so_far(f'{MetricName.RUN_CO2_BUDGET_TONNES}{{run=~"$run"}}') + ")"
SELECTED_SITES = f"on (site) count by (site) ({so_far(ENERGY)})"
"""`and` this: only the sites of the selected runs (the site constants carry no run)."""


def energy_dashboard() -> dict:
    """Power, energy, CO2, water and budget of the selected runs, and the sampler's health."""
    panels = [
        *_power_now(),
        *_energy_and_carbon(),
        *_water_and_efficiency(),
        *_energy_by_device(),
        *_budget_and_hours(),
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
    """Cluster power (live agents only), power by node and by GPU."""
    cluster = stat(
        "Cluster power",
        [target(f"sum by (source) ({live(POWER)})", "{{source}}", instant=True)],
        "watt",
        "Sum of the latest power reading of every device of a live agent (up and not finished), per "
        "source label. Says so when no agent is live: a run's last reading is not shown as power now.",
    )
    return [
        (row("Power"), 24, 1),
        (no_value(cluster, NONE_LIVE), 6, 5),
        (
            timeseries(
                "Power by node", [target(f"sum by (run, host) ({POWER})", "{{run}} {{host}}")], "watt"
            ),
            9,
            8,
        ),
        (
            timeseries(
                "Power by GPU",
                [
                    target(
                        f'{MetricName.POWER_WATTS}{{kind="gpu", {SELECTOR}}}', "{{run}} {{host}} {{device}}"
                    )
                ],
                "watt",
            ),
            9,
            8,
        ),
    ]


def _energy_and_carbon() -> list[tuple[Panel, int, int]]:
    """Energy so far per source, and CO2 so far and projected (every selected run, live or finished)."""
    co2 = stat(
        "CO2 so far and projected",
        [
            *tonnes(CO2_SO_FAR, "{{run}} so far", "AB"),
            *tonnes(CO2_PROJECTED, "{{run}} at end", "CD"),
        ],
        KG,
        "CO2eq = MWh x PUE x carbon intensity of the run's site (each counter's last value, so a run's "
        "last seconds count), every selected run "
        "live or finished. The intensity and its source: the panel 'Carbon intensity and its source'. "
        f"Projected = so far / share of planned tokens done ({MetricName.RUN_PLANNED_TOKENS}).",
    )
    return [
        (row("Energy, carbon and water (every selected run, live or finished)"), 24, 1),
        (
            stat(
                "Energy so far",
                [target(f"sum by (source) ({so_far(ENERGY)}) / 3600", "{{source}}", instant=True)],
                "watth",
                "IT energy measured since the agents started, per source (counter, sampled, estimated, "
                "simulated), summed over every selected run, live or finished (each series' last value in "
                "the range). PUE is not folded in. An agent restarted under the same labels counts from "
                "its restart here; the ledger (`wattlog table`) keeps every attempt.",
            ),
            6,
            6,
        ),
        (report_link(unit_by_ref(co2, {"A": KG, "B": T, "C": KG, "D": T})), 6, 6),
    ]


def _water_and_efficiency() -> list[tuple[Panel, int, int]]:
    """Water so far and projected, and tokens per joule of each run so far."""
    tokens = f"sum by (run) ({so_far(f'{MetricName.TRAIN_TOKENS_TOTAL}{{{SELECTOR}}}')})"
    joules = f"sum by (run) ({so_far(ENERGY)})"
    return [
        (
            report_link(
                stat(
                    "Water so far and projected",
                    [
                        target(
                            f"{WATER_KL} * 1000",
                            "{{run}} so far",
                            instant=True,
                        ),
                        target(
                            f"{projected(WATER_KL)} * 1000",
                            "{{run}} at end",
                            "B",
                            instant=True,
                        ),
                    ],
                    "litre",
                    "MWh x PUE x (WUE on-site + off-site), the OLMo 2 paper's convention; "
                    "a site's range is taken at its upper end (sites.rules.yml).",
                )
            ),
            6,
            6,
        ),
        (
            report_link(
                stat(
                    "Tokens per joule",
                    [target(f"{tokens} / on (run) {joules}", "{{run}}", instant=True)],
                    TOK_PER_J,
                    "Training tokens per joule of IT energy, each run from its start (as the report's). "
                    "The training board shows it over the last 5 minutes.",
                    decimals=3,
                )
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
                [target(f"{so_far(ENERGY)} / 3600", instant=True, fmt="table")],
                "watth",
                "Energy per device with the source of each figure: its last value in the range, so a "
                "finished run's devices stay listed.",
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


def _budget_and_hours() -> list[tuple[Panel, int, int]]:
    """The CO2 budget (spent, projected, remaining), CO2 by hour and the intensity with its source."""
    budget = stat(
        "CO2 budget: spent, projected, remaining",
        [
            *tonnes(CO2_SO_FAR, "{{run}} spent", "AB"),
            *tonnes(CO2_PROJECTED, "{{run}} projected at planned tokens", "CD"),
            *tonnes(f"{BUDGET} - on (run) {CO2_SO_FAR}", "{{run}} remaining", "EF"),
        ],
        KG,
        f"Against {MetricName.RUN_CO2_BUDGET_TONNES} (yours to provide, see rules.yml): empty without "
        f"it. Projected at the planned tokens ({MetricName.RUN_PLANNED_TOKENS}). Negative remaining: over "
        "budget.",
    )
    hourly = f"sum by (run, site) (increase({ENERGY}[1h])) / 3.6e6"  # kWh in each hour
    per_kwh = f"on (site) group_left () wattlog:site_pue * on (site) group_left () {INTENSITY}"
    by_hour = timeseries(
        "CO2 by hour, with the hour's intensity",
        [
            {
                **target(
                    f"{hourly} * {per_kwh}",
                    "{{run}} CO2",
                ),
                "interval": "1h",
            },
            target(f"max by (site) ({INTENSITY}) and {SELECTED_SITES}", "{{site}} intensity", "B"),
        ],
        KG_FIXED,
        "CO2eq of each hour's IT energy (increase over the hour) x PUE x the hour's intensity, kg; the "
        "intensity (right axis) as Prometheus has it: a site constant (see its source beside).",
    )
    by_hour["fieldConfig"]["overrides"].append(
        {
            "matcher": {"id": "byFrameRefID", "options": "B"},
            "properties": [
                {"id": "unit", "value": KG_PER_KWH},
                {"id": "custom.axisPlacement", "value": "right"},
            ],
        }
    )
    sources = table(
        "Carbon intensity and its source",
        [
            target(
                f"max by (site, intensity_source) ({so_far(INTENSITY)}) and {SELECTED_SITES}",
                instant=True,
                fmt="table",
            )
        ],
        KG_PER_KWH,
        "The intensity each selected site's CO2 uses, with its source (sites.rules.yml, from the site "
        "catalog).",
    )
    return [
        (row("Budget and CO2 by hour"), 24, 1),
        (report_link(unit_by_ref(budget, {"A": KG, "B": T, "C": KG, "D": T, "E": KG, "F": T})), 8, 7),
        (by_hour, 10, 7),
        (sources, 6, 7),
    ]


def _sampler_health() -> list[tuple[Panel, int, int]]:
    """Agents up, finished or lost; samples per second, overruns and tick lateness."""
    return [
        (row("Sampler health"), 24, 1),
        (agents_panel(), 6, 7),
        (
            timeseries(
                "Samples per second",
                [target(f"rate({MetricName.SAMPLES_TOTAL}{{{SELECTOR}}}[1m])", "{{run}} {{host}}")],
                "hertz",
            ),
            6,
            7,
        ),
        (
            timeseries(
                "Overruns per minute",
                [
                    target(
                        f"60 * rate({MetricName.SAMPLE_OVERRUNS_TOTAL}{{{SELECTOR}}}[5m])", "{{run}} {{host}}"
                    )
                ],
                "none",
            ),
            6,
            7,
        ),
        (
            timeseries(
                "Tick lateness",
                [target(f"{MetricName.SAMPLE_LATENESS_SECONDS}{{{SELECTOR}}}", "{{run}} {{host}} {{stat}}")],
                "s",
            ),
            6,
            7,
        ),
    ]
