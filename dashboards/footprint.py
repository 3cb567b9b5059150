"""The footprint in PromQL, from each series' last raw value: CO2, water and projections that see a run's end.

The recording rules of prometheus/rules.yml (`wattlog:run_co2_tonnes`...) are evaluated every 15 s
while an agent is scraped every 5 s and its series go stale 5 s after its last scrape: the rules'
last value misses up to 15 s of a run's end (a short run read 11.28 g against the ledger's 12.13 g,
its projections empty). The panels therefore take each raw counter's last value in the range (which
no evaluation can miss) and apply the same formula, the paper's (DESIGN.md):

    CO2 t     = MWh x PUE x kg/kWh                  (the site's constants, sites.rules.yml)
    water kL  = MWh x PUE x (WUE on-site + off-site) L/kWh
    projected = so far / share of planned tokens done

The site constants carry no run and never go stale while Prometheus runs, so joining on them is safe.
"""

from __future__ import annotations

from wattlog.dashboards.queries import RUN_SITE, so_far
from wattlog.metric_names import MetricName

PUE = "wattlog:site_pue"
INTENSITY = "wattlog:site_carbon_intensity_kg_per_kwh"
WUE = "(wattlog:site_wue_onsite_l_per_kwh + on (site) wattlog:site_wue_offsite_l_per_kwh)"

RUN_MWH = f"sum by (run, site) ({so_far(f'{MetricName.ENERGY_JOULES_TOTAL}{{{RUN_SITE}}}')}) / 3.6e9"
"""Each run's IT energy at each site, MWh: the counters' last values (a finished run's too)."""

CO2_T = f"sum by (run) ({RUN_MWH} * on (site) group_left () {PUE} * on (site) group_left () {INTENSITY})"
"""Each selected run's CO2eq so far, t."""

WATER_KL = f"sum by (run) ({RUN_MWH} * on (site) group_left () {PUE} * on (site) group_left () {WUE})"
"""Each selected run's water so far, kL (the paper's convention: both WUE terms x PUE)."""

_RUN = '{run=~"$run"}'
PROGRESS = (
    f"sum by (run) ({so_far(MetricName.TRAIN_TOKENS_TOTAL + _RUN)}) / on (run) "
    f"max by (run) ({so_far(MetricName.RUN_PLANNED_TOKENS + _RUN)})"
)
"""Each run's share of its planned tokens done (empty without `wattlog_run_planned_tokens`)."""


def projected(so_far_expr: str) -> str:
    """`so_far_expr` (per run) scaled to the planned tokens: so far / share done; empty before any token."""
    return f"{so_far_expr} / on (run) group_left () ({PROGRESS} > 0)"
