"""Which day partitions a ledger process has seen exist or given up on: flushes pay nothing for them.

One :class:`DayPlan` per :class:`wattlog.accounting.ledger.store.Ledger` (not per connection: an
agent opens one connection per flush, so a per-connection memory was empty at every flush). A flush
whose days are known costs no query; a day this process may not create (its role lacks CREATE, or
DEFAULT already holds rows of it) is declined and tried again only after `retry_s`, without the
advisory lock and without a failed statement. The rows of a declined day land in DEFAULT, where
`wattlog check` names them and `wattlog partitions` moves them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from wattlog.accounting.ledger.partitions import (
    DAY_HOURS,
    can_create,
    create_days,
    day_partitions,
    default_days,
    is_partitioned,
)

logger = logging.getLogger(__name__)

DAYS_AHEAD = 1
"""Days after today a run's start creates, and after its own day the last hour of a day creates."""


def days_of(hours: Iterable[int], ahead: int = DAYS_AHEAD) -> set[int]:
    """The days of `hours`, and the `ahead` days after any day whose last hour is among them.

    >>> sorted(days_of([24 * 5 + 3])), sorted(days_of([24 * 5 + 23]))
    ([5], [5, 6])
    """
    days: set[int] = set()
    for hour in hours:
        day = hour // DAY_HOURS
        days.add(day)
        if hour % DAY_HOURS == DAY_HOURS - 1:  # the day's last hour: make the next ones before they start
            days.update(range(day + 1, day + 1 + ahead))
    return days


def start_days(hour: int, ahead: int = DAYS_AHEAD) -> set[int]:
    """The days a run starting in `hour` needs first: its own and the `ahead` after it."""
    day = hour // DAY_HOURS
    return set(range(day, day + 1 + ahead))


@dataclass
class DayPlan:
    """A process's memory of the energy table's day partitions (PostgreSQL; SQLite asks nothing)."""

    wall: Callable[[], float]
    """The wall clock, seconds (the ledger's)."""
    retry_s: float = 3600.0
    """How long a declined day is left alone before this process tries it again."""
    partitioned: bool | None = None
    ready: set[int] = field(default_factory=set)
    declined: dict[int, float] = field(default_factory=dict)
    """Day -> wall time after which it is tried again."""

    def wanted(self, days: Iterable[int]) -> set[int]:
        """Of `days`, those not known to exist and not declined a short while ago."""
        if self.partitioned is False:
            return set()
        now_s = self.wall()
        return {d for d in days if d not in self.ready and self.declined.get(d, 0.0) <= now_s}

    def ensure(
        self, transaction: Callable[[str], AbstractContextManager[Session]], days: Iterable[int]
    ) -> set[int]:
        """Create what is missing of `days` where this role can; returns the days declined now.

        Nothing is asked of the database when every day is known; otherwise what exists and what may
        be made are read in one transaction and the days made in a second, before the flush's (see
        partitions.create_days). Two, because the reads lock DEFAULT's partition for reading until
        their transaction ends: a process that read it, then waited on the creation lock, held what
        the creator needed (16 agents starting at once on PostgreSQL: "deadlock detected").
        """
        wanted = self.wanted(days)
        if not wanted:
            return set()
        with transaction("list the energy table's day partitions") as session:
            connection = session.connection()
            if self.partitioned is None:
                self.partitioned = is_partitioned(connection)
            if not self.partitioned:
                return set()
            self.ready |= wanted & set(day_partitions(connection))
            missing = wanted - self.ready
            if not missing:
                return set()
            allowed = can_create(connection)
            refused = default_days(connection, missing) if allowed else missing
        if missing - refused:
            with transaction("add the flush's day partitions") as session:
                self.ready |= create_days(session, missing - refused)
        declined = missing - self.ready
        self._decline(declined, creatable=allowed)
        return declined

    def _decline(self, days: set[int], *, creatable: bool) -> None:
        if not days:
            return
        until_s = self.wall() + self.retry_s
        self.declined.update(dict.fromkeys(days, until_s))
        why = "DEFAULT already holds rows of them" if creatable else "this role may not create partitions"
        logger.warning(
            "energy rows of days %s go to the DEFAULT partition (%s): `wattlog check` names them, "
            "`wattlog partitions` (as the table's owner) moves them; retried in %.0f s",
            sorted(days),
            why,
            self.retry_s,
        )
