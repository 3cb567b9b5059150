"""Market-based Scope 2 beside location-based in `wattlog table --market-file`: two columns per run.

The table's CO2 column is location-based (the grid's intensity, hour by hour where the site
names a series or provider). With a market file (:mod:`wattlog.accounting.carbon.market`), each run's
row adds its market-based tonnes under annual matching and under hourly matching
(:mod:`wattlog.accounting.carbon.scope2`) as extra columns, so they appear in the table, its CSV and
its JSON (a row's ``extra``) and in the report the same way. A run matches against the uses the
ledger recorded for other runs (``wattlog scope2`` records them) and those of the runs above it
in the table, so no instrument MWh counts twice; the table itself records nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from wattlog.accounting.carbon.instruments import load_uses
from wattlog.accounting.carbon.market import Market, load_markets
from wattlog.accounting.carbon.scope2 import Allocation, Matching
from wattlog.accounting.carbon.sites import get_site
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import RunInfo
from wattlog.accounting.publishing.exports import plain
from wattlog.accounting.publishing.render import TableRow
from wattlog.accounting.publishing.run_table import TableOptions, energy_of, read_run
from wattlog.errors import ConfigError

HEADERS = {
    Matching.ANNUAL: "Market-based tCO2eq (annual matching)",
    Matching.HOURLY: "Market-based tCO2eq (hourly matching)",
}
"""The extra columns' headers, each naming its method (the CO2 column is location-based)."""

MARKET_FILE_ENV = "WATTLOG_MARKET_FILE"
"""The market file the report reads (the table takes ``--market-file``)."""


def add_market_columns(
    ledger: Ledger,
    runs: Sequence[RunInfo],
    rows: Sequence[TableRow],
    options: TableOptions,
    market_file: Path,
) -> tuple[list[TableRow], list[str]]:
    """The rows with market-based columns on the last ``len(runs)`` (the runs' rows), and the notes.

    A run whose site has no market table, or that recorded no energy by hour, shows "-".

    Raises:
        ConfigError: An unreadable market file.
    """
    markets = load_markets(market_file)
    allocations: dict[tuple[str, Matching], Allocation] = {}
    out = list(rows)
    first = len(out) - len(runs)
    missing: list[str] = []
    for i, run in enumerate(runs):
        row = out[first + i]
        site_name = (options.site or run.site or "").strip().lower()
        market = markets.get(get_site(site_name, options.catalog).name) if site_name else None
        cells = _market_cells(ledger, run, options, market, site_name, allocations) if market else None
        if cells is None:
            missing.append(run.name)
        for method in Matching:
            row = row.with_extra(HEADERS[method], cells[method] if cells else "-")
        out[first + i] = row
    notes = [
        "CO2 (tCO2eq) is location-based; market-based columns (GHG Protocol Scope 2 dual reporting): "
        f"{Matching.ANNUAL.description}; {Matching.HOURLY.description}. Instruments and residual mixes "
        f"from {market_file}; uses recorded by `wattlog scope2` are spent (this table records none)."
    ]
    if missing:
        notes.append(
            f"No market-based figure (no market table for the site, or no energy): {', '.join(missing)}."
        )
    return out, notes


def _market_cells(
    ledger: Ledger,
    run: RunInfo,
    options: TableOptions,
    market: Market,
    site_name: str,
    allocations: dict[tuple[str, Matching], Allocation],
) -> dict[Matching, str] | None:
    """The run's market-based tonnes by method, against the instruments others left; None: no energy."""
    site = get_site(site_name, options.catalog)
    energy = energy_of(read_run(ledger, run, options, hourly=True, gaps=False), run, options)
    by_hour = energy.by_hour_mwh if energy is not None else None
    if not by_hour:
        return None
    cells: dict[Matching, str] = {}
    for method in Matching:
        allocation = allocations.get((site.name, method))
        if allocation is None:
            allocation = allocations[(site.name, method)] = Allocation(market, method)
            allocation.record(load_uses(ledger, site.name, method.value))
        try:
            co2_t = allocation.apply(by_hour, site.pue, run.name).co2_t
            cells[method] = plain(float(f"{co2_t:.4g}"))  # 4 figures, never scientific (CSV, JSON)
        except ConfigError:  # a PUE range: market-based needs one facility energy
            cells[method] = "-"
    return cells
