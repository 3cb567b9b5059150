"""`wattlog windows RUN`: the measurement windows of a run (`with agent.window("eval"):`), from the ledger."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Annotated

import typer

from wattlog.accounting.publishing.render import TableFormat, render_grid, show
from wattlog.options import DbOption, FormatOption
from wattlog.records import EnergyInterval

_HEADERS = ["Window", "Inside", "Start (UTC)", "Seconds", "Devices", "Energy Wh", "Band Wh", "Sources"]


def window_cells(rows: list[EnergyInterval]) -> list[list[str]]:
    """One line per window (its devices summed, never averaged): name, parent, start, length, energy, band."""
    groups: dict[tuple[str, str, float, float], list[EnergyInterval]] = defaultdict(list)
    for r in rows:
        groups[(r.window, r.parent, r.start_s, r.end_s)].append(r)
    cells = []
    for (name, parent, start_s, end_s), group in groups.items():
        wh = 3600.0
        cells.append(
            [
                name,
                parent or "-",
                _utc(start_s),
                f"{end_s - start_s:.1f}",
                str(len(group)),
                f"{sum(r.energy_j for r in group) / wh:.4f}",
                f"{sum(r.low_j for r in group) / wh:.4f}-{sum(r.high_j for r in group) / wh:.4f}",
                ", ".join(sorted({str(r.source) for r in group})),
            ]
        )
    return cells


def windows(
    run: Annotated[str, typer.Argument(help="Run name or id.")],
    fmt: FormatOption = TableFormat.RICH,
    db: DbOption = None,
) -> None:
    """List a run's measurement windows: energy of each (all its devices summed), band and sources."""
    from wattlog.accounting.ledger.engine import describe_url, make_engine
    from wattlog.accounting.ledger.store import Ledger
    from wattlog.accounting.ledger.windows import windows as ledger_windows

    engine = make_engine(db, create=False)
    try:
        rows = ledger_windows(Ledger(engine), run)
    finally:
        engine.dispose()
    notes = [
        f"Ledger: {describe_url(db)}.",
        "Each edge is exact to the energy counter's update around it where the device has one; "
        "the band adds the sensor's calibration and what the readings leave open.",
    ]
    if not rows:
        notes.insert(0, f"run {run!r} has no windows (open one with `with agent.window(name):`)")
    show(render_grid(_HEADERS, window_cells(rows), notes, fmt, right={3, 4, 5, 6}))


def _utc(t_s: float) -> str:
    return dt.datetime.fromtimestamp(t_s, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def register(app: typer.Typer) -> None:
    """Add `wattlog windows` to the root app."""
    app.command("windows")(windows)
