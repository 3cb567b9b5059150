"""CO2, water and projections of the selected runs, from the raw counters' last values.

The boards used to read recording rules (`wattlog:run_co2_tonnes`...): evaluated every 15 s,
they never saw the last scrape of a run that ended between two evaluations (its series go
stale at once), and `last_over_time` kept the figure from up to 15 s before the end: a short
run's CO2 read 11.28 g against the ledger's 12.13 g (-7 %), its projections empty. Here the
paper's formula is applied to each energy counter's last value in the range, so a finished
run's figure is the ledger's (tests/integration/test_panels_vs_ledger.py, at the shipped 5 s
scrape and 15 s evaluation).
"""

from __future__ import annotations

from wattlog.dashboards.panels import SELECTOR
from wattlog.dashboards.queries import so_far
from wattlog.metric_names import MetricName

__all__ = ["CO2_PROJECTED", "CO2_SO_FAR", "PROGRESS", "WATER_PROJECTED_L", "WATER_SO_FAR_L"]

_MWH = f"sum by (run, site) ({so_far(f'{MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}}')}) / 3.6e9"


def _site(constant: str) -> str:
    """A site constant's last value in the range, one per site (present for a past range too)."""
    return f"max by (site) ({so_far(constant)})"


_PUE = f"on (site) group_left () {_site('wattlog:site_pue')}"
_INTENSITY = f"on (site) group_left () {_site('wattlog:site_carbon_intensity_kg_per_kwh')}"
_WUE = (
    f"on (site) group_left () ({_site('wattlog:site_wue_onsite_l_per_kwh')} "
    f"+ on (site) {_site('wattlog:site_wue_offsite_l_per_kwh')})"
)

CO2_SO_FAR = f"sum by (run) ({_MWH} * {_PUE} * {_INTENSITY})"
"""t CO2eq of each run so far: MWh x PUE x kg/kWh (DESIGN.md), its energy the counters' last values."""
WATER_SO_FAR_L = f"sum by (run) ({_MWH} * {_PUE} * {_WUE}) * 1000"
"""Litres of water of each run so far: MWh x PUE x (WUE on-site + off-site) kL, x 1000."""
_PLANNED = MetricName.RUN_PLANNED_TOKENS + '{run=~"$run"}'
PROGRESS = (
    f"sum by (run) ({so_far(f'{MetricName.TRAIN_TOKENS_TOTAL}{{{SELECTOR}}}')}) "
    f"/ on (run) max by (run) ({so_far(_PLANNED)})"
)
"""Share of each run's planned tokens trained (empty without wattlog_run_planned_tokens)."""
CO2_PROJECTED = f"{CO2_SO_FAR} / on (run) ({PROGRESS} > 0)"
"""t CO2eq at the run's end: so far / share of planned tokens done."""
WATER_PROJECTED_L = f"{WATER_SO_FAR_L} / on (run) ({PROGRESS} > 0)"
"""Litres of water at the run's end."""
