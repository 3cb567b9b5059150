"""`wattlog compact`: fold the ledger's old flush rows into hourly buckets and return the space."""

from __future__ import annotations

from typing import Annotated

import typer

from wattlog.numbers import check_number
from wattlog.options import DbOption


def compact(
    older_than_days: Annotated[
        float,
        typer.Option(
            "--older-than-days",
            help="Raw retention: fold rows of hours older than this (the disk it costs is printed).",
        ),
    ] = 7.0,
    db: DbOption = None,
) -> None:
    """Fold the ledger's old flush rows into hourly buckets (totals and hour-by-hour energy kept exactly)."""
    from wattlog.accounting.ledger.compaction import return_space
    from wattlog.accounting.ledger.engine import describe_url, make_engine
    from wattlog.accounting.ledger.partitions import day_bytes
    from wattlog.accounting.ledger.store import Ledger
    from wattlog.accounting.ledger.verify import check_ledger

    check_number("--older-than-days", older_than_days, low=0, high=100 * 365, hint="e.g. 7")
    engine = make_engine(db, create=False)
    try:
        ledger = Ledger(engine)
        check_ledger(ledger, describe_url(db))  # folding impossible rows into buckets would hide them
        done = ledger.compact_hourly(older_than_days * 86_400)
        if done.raw_rows:
            return_space(engine)
        with engine.connect() as connection:
            sizes = day_bytes(connection)
    finally:
        engine.dispose()
    print(f"ledger {describe_url(db)}: {done.raw_rows} raw rows folded into {done.hourly_rows} hourly rows")
    if sizes:  # PostgreSQL: what keeping raw rows costs, so the retention is chosen knowing it
        raw = [size for size, state in sizes.values() if state == "raw"]
        folded = [size for size, state in sizes.values() if state == "compacted"]
        print(
            f"raw retention {older_than_days:g} days: {len(raw)} day(s) still raw, {sum(raw) / 2**30:.2f} "
            f"GiB ({sum(raw) / max(len(raw), 1) / 2**30:.2f} GiB a day); {len(folded)} compacted day(s), "
            f"{sum(folded) / 2**30:.2f} GiB"
        )
