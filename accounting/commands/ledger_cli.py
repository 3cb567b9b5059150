"""`wattlog replay` (store what spools kept while the ledger was down), `wattlog gaps`, `wattlog check`."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from wattlog.accounting.progress import progress_lines
from wattlog.errors import LedgerError
from wattlog.options import DbOption


def replay(
    db: DbOption = None,
    spool_dir: Annotated[
        Path | None,
        typer.Option("--spool-dir", help="Spool folder (default $WATTLOG_SPOOL_DIR or ~/.local/state/...)."),
    ] = None,
) -> int:
    """Store the energy rows and events spooled while the ledger was unavailable; each lands once.

    A file's bad lines (a bad byte, a number stored as text, a negative or NaN row) are named
    by file and line and kept in `<file>.rejected`; its good lines and every later file are
    still stored. What could not be stored (bad lines, a file the ledger refused) makes the
    replay incomplete: one closing line and exit 75, from the same verdict `wattlog run` reads.
    """
    from wattlog.accounting.ledger.engine import describe_url, make_engine
    from wattlog.accounting.ledger.spool import default_folder, replay_folder
    from wattlog.accounting.ledger.store import Ledger

    folder = spool_dir or default_folder()
    where = describe_url(db)
    engine = make_engine(db)
    try:
        done = replay_folder(Ledger(engine), folder, where)
    finally:
        engine.dispose()
    print(
        f"ledger {where}: {done.written} energy rows stored from {done.files} spool file(s) in {folder} "
        f"({done.rows - done.written} already there)"
    )
    notes = []
    if done.busy:
        notes.append(f"{done.busy} file(s) in use by a live run, left for it")
    if done.other_ledgers:
        notes.append(f"{done.other_ledgers} file(s) of other ledgers left alone")
    if done.torn:
        notes.append(f"{done.torn} torn line(s) skipped")
    notes += done.moved  # a ledger replaced during the run: its runs found by name
    notes += done.orphaned  # a deleted run's spool: set aside, never a file that fails every replay
    if notes:
        print("; ".join(notes))
    for line in done.rejected:  # one line per file: its good lines are stored, its bad ones kept aside
        print(f"wattlog: {line}", file=sys.stderr)
    verdict = done.completeness()
    if not verdict.complete:
        print(verdict.line("wattlog replay", ""), file=sys.stderr)
    return verdict.exit_code(0)


def gaps(
    run: Annotated[str, typer.Argument(help="Run name or id.")],
    db: DbOption = None,
) -> None:
    """List a run's gaps: when, which device, how long and why (nothing inside them is filled in)."""
    from wattlog.accounting.ledger.engine import make_engine
    from wattlog.accounting.ledger.store import Ledger
    from wattlog.accounting.publishing.gaps import run_gaps

    engine = make_engine(db, create=False)
    try:
        summary = run_gaps(Ledger(engine), run)
    finally:
        engine.dispose()
    console = Console(highlight=False)
    if not summary.gaps:
        console.print(f"run {run}: no gaps recorded")
        return
    table = Table(title=f"Gaps of {run}: {summary.line()}")
    for column in ("start (UTC)", "seconds", "host", "device", "reason", "detail"):
        table.add_column(column, justify="right" if column == "seconds" else "left")
    for gap in summary.gaps:
        start = dt.datetime.fromtimestamp(gap.start_s, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(start, f"{gap.duration_s:.1f}", gap.host, gap.device, gap.reason.words, gap.detail)
    console.print(table)


def check(
    db: DbOption = None,
    repair: Annotated[
        bool, typer.Option("--repair", help="Recompute the totals and hours that disagree with their rows.")
    ] = False,
) -> int:
    """Check the whole ledger: the file (SQLite), every run's rows, and the totals and hours a table
    reads against the rows they sum; exit 2 if damaged (with --repair: recompute those, then 0)."""
    from wattlog.accounting.ledger.engine import describe_url, make_engine
    from wattlog.accounting.ledger.store import Ledger
    from wattlog.accounting.ledger.verify import (
        check_ledger,
        default_partition_rows,
        rollup_drift,
        runs_with_impossible_sums,
    )

    where = describe_url(db)
    engine = make_engine(db, create=False)
    try:
        ledger = Ledger(engine)
        if repair:
            for run_id in runs_with_impossible_sums(ledger):
                ledger.rebuild_totals(run_id)
                print(f"run {run_id}: impossible totals or hours recomputed from its rows", file=sys.stderr)
        try:
            check_ledger(ledger, where)  # `wattlog table` checks only the runs it shows
        except LedgerError as error:
            if not repair:
                raise
            raise LedgerError(
                f"{error}; --repair cannot mend this: the energy rows themselves are impossible and they "
                "are the evidence (totals and hours are recomputed from them)"
            ) from error
        drift = rollup_drift(ledger, progress_lines("check", quiet_s=2.0))
        for run_id, lines in sorted(drift.items()):
            shown = "; ".join(lines[:3]) + (f"; and {len(lines) - 3} more" if len(lines) > 3 else "")
            print(f"run {run_id}: its totals disagree with its rows: {shown}", file=sys.stderr)
            if repair:
                ledger.rebuild_totals(run_id)
                print(f"run {run_id}: totals and hours recomputed from its rows", file=sys.stderr)
        misplaced = default_partition_rows(ledger, where)  # PostgreSQL: rows whose day has no partition
        if misplaced:
            print(misplaced, file=sys.stderr)
        if drift and not repair:
            raise LedgerError(
                f"ledger {where}: {len(drift)} run(s) whose totals disagree with their rows (a table shows "
                "the totals): `wattlog check --repair` recomputes them from the rows"
            )
        if misplaced:
            raise LedgerError(f"ledger {where}: rows in DEFAULT: `wattlog partitions` moves them")
    finally:
        engine.dispose()
    agreed = f"the totals of {len(drift)} run(s) recomputed" if drift else "every total and hour agrees"
    print(f"ledger {where}: no damage, no impossible rows, {agreed} with its rows")
    return 0


def register(app: typer.Typer) -> None:
    """Add `wattlog replay`, `wattlog gaps` and `wattlog check` to the root app."""
    app.command("replay")(replay)
    app.command("gaps")(gaps)
    app.command("check")(check)
