"""The run an alert without a (known) run label belongs to: its host's run at the alert's time.

An alert raised by a finished run's target (WattlogAgentDown an hour after a normal end) carries
no run label: the webhook receiver recorded it by creating a phantom run ``host:vm``, status
running, in the ledger. The host's own run at that time (the latest started by then) is where it
belongs; only a host the ledger has no run of falls back to a ``host:`` record.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlmodel import col

from wattlog.accounting.ledger import Ledger
from wattlog.accounting.ledger.models import Run

__all__ = ["host_run"]


def host_run(ledger: Ledger, host: str, time_s: float, prefix: str) -> str | None:
    """The name of the latest run on `host` started by `time_s` (Unix s), not a ``prefix`` record.

    Args:
        ledger: The ledger.
        host: The host the alert is about.
        time_s: When the alert started.
        prefix: The name prefix of the receiver's own host records, never chosen.
    """
    with ledger.transaction(f"find the run of host {host!r}") as session:
        query = (
            select(col(Run.name))
            .where(col(Run.host) == host, col(Run.start_s) <= time_s, ~col(Run.name).startswith(prefix))
            .order_by(col(Run.start_s).desc(), col(Run.id).desc())
            .limit(1)
        )
        return session.execute(query).scalars().first()
