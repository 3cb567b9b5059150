"""`wattlog runs reap`: close the runs whose agent stopped renewing their lease.

A run killed with -9, or whose node vanished, cannot end itself: its lease runs out a few flushes
later (see wattlog.accounting.ledger.lease) and this command closes it as `lost`, with a gap from
its last row to the lease's end. A node of a live run whose own lease ran out is marked lost, a gap on
that node until it comes back. The table and the report do the same before they read; this is
for a cron job or an operator. Exits 0 whether or not a run was closed; 2 if the ledger fails.
"""

from __future__ import annotations

import typer

from wattlog.options import DbOption


def reap(db: DbOption = None) -> None:
    """Close every running run whose agent stopped renewing its lease as `lost` (its gap recorded)."""
    from wattlog.accounting.ledger.engine import describe_url, make_engine
    from wattlog.accounting.ledger.lease import describe_lost, reap_lost
    from wattlog.accounting.ledger.node_lease import describe_lost_node
    from wattlog.accounting.ledger.store import Ledger

    engine = make_engine(db, create=False)
    try:
        nodes, lost = reap_lost(Ledger(engine))
    finally:
        engine.dispose()
    for node in nodes:
        print(describe_lost_node(node))
    for run in lost:
        print(describe_lost(run))
    lost_nodes = f", {len(nodes)} node(s) marked lost" if nodes else ""
    print(f"ledger {describe_url(db)}: {len(lost)} run(s) closed as lost{lost_nodes}")


def register(app: typer.Typer) -> None:
    """Add `reap` to `app` (the `runs` sub-app: `wattlog runs reap`)."""
    app.command("reap")(reap)
