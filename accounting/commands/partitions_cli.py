"""`wattlog partitions`: move the DEFAULT partition's rows to their days and make days ahead (PostgreSQL)."""

from __future__ import annotations

from typing import Annotated

import typer

from wattlog.accounting.units import HOUR_S
from wattlog.numbers import check_number
from wattlog.options import DbOption


def partitions(
    ahead_days: Annotated[
        int,
        typer.Option("--ahead-days", help="Create the partitions of today and this many days after it."),
    ] = 1,
    db: DbOption = None,
) -> None:
    """Move rows the DEFAULT partition holds into their day partitions and create days ahead (PostgreSQL)."""
    from wattlog.accounting.ledger.engine import describe_url, make_engine
    from wattlog.accounting.ledger.partitions import DAY_HOURS
    from wattlog.accounting.ledger.placement import place
    from wattlog.accounting.ledger.store import Ledger

    check_number("--ahead-days", ahead_days, low=0, high=366, hint="e.g. 54 for a 54-day run")
    where = describe_url(db)
    engine = make_engine(db, create=False)
    try:
        ledger = Ledger(engine)
        today = int(ledger.clock.wall() // (HOUR_S * DAY_HOURS))
        done = place(ledger.transaction, today, ahead_days)
    finally:
        engine.dispose()
    if not done.partitioned:
        print(f"ledger {where}: its energy table has no partitions (SQLite): nothing to move or create")
        return
    moved = ", ".join(f"day {day}: {rows:,}" for day, rows in done.moved.items()) or "none"
    print(f"ledger {where}: rows moved out of DEFAULT into their days: {moved}")
    last = today + ahead_days
    print(f"ledger {where}: {len(done.created)} day partition(s) created ahead, through day {last}")


def register(app: typer.Typer) -> None:
    """Add `wattlog partitions` to the root app."""
    app.command("partitions")(partitions)
